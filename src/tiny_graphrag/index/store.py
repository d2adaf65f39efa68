"""The index directory: manifest, graph pickle, SQLite store of texts/communities/reports, vectors.

Layout of `graphs/NAME/`::

    manifest.json      written last: its presence means the index is complete
    graph.pkl          the networkx MultiDiGraph (loaded with a restricted unpickler)
    index.sqlite       documents, chunks (+ FTS5 keyword index), communities, reports
    vectors/NAME.npy   L2-normalized float32 rows; vectors/NAME.ids.json the row ids

A build writes into a temporary sibling directory and `publish` moves it into place, so an interrupted build never
leaves something that loads as if complete."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from tiny_graphrag.errors import IndexFormatError
from tiny_graphrag.index.manifest import FORMAT_VERSION, read_manifest, sha256_file
from tiny_graphrag.index.placement import DATABASE, GRAPH, MANIFEST, STAGING_MARKER, VECTORS
from tiny_graphrag.records import Chunk, Community, Document, Finding, Report, TreeNode, short_ids

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, text TEXT NOT NULL,
    info TEXT);                         -- JSON: units (pages, rows), metadata, file sha256; NULL for plain text
CREATE TABLE IF NOT EXISTS chunks (
    sid INTEGER PRIMARY KEY,            -- short source id, cited as [Data: Sources (sid)]
    id TEXT UNIQUE NOT NULL, doc_id TEXT NOT NULL REFERENCES documents(id),
    idx INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
    n_tokens INTEGER NOT NULL, text TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, content='chunks', content_rowid='sid', tokenize='porter unicode61');
CREATE TABLE IF NOT EXISTS communities (
    id TEXT PRIMARY KEY, level INTEGER NOT NULL, parent TEXT,
    children TEXT NOT NULL, nodes TEXT NOT NULL, edges TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reports (
    community_id TEXT PRIMARY KEY, level INTEGER NOT NULL, rating REAL NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tree_nodes (id TEXT PRIMARY KEY, layer INTEGER NOT NULL, body TEXT NOT NULL);
"""

_FTS_TOKEN = re.compile(r"\w+")


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path / DATABASE, check_same_thread=False)
    db.row_factory = sqlite3.Row
    try:  # a database file whose hash was recomputed after tampering: refused now, not mid-query
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        db.close()
        raise IndexFormatError(
            f"{path / DATABASE} is not a readable SQLite database ({exc}): the index is damaged. "
            "Rebuild it with `tiny-graphrag build ... --force`"
        ) from exc
    return db


def _info_json(d: Document) -> str | None:
    """What the index keeps of a document besides its text: units, metadata and the file's sha256
    (JSON in `documents.info`); None for plain text (as before they existed)."""
    info = {"units": [list(u) for u in d.units], "metadata": dict(d.metadata), "sha256": d.file_sha256}
    return json.dumps({k: v for k, v in info.items() if v}, ensure_ascii=False) if any(info.values()) else None


def _where_sql(where: Mapping[str, str] | None) -> tuple[str, list[str]]:
    """ " AND ..." conditions on the documents table `d` (and their arguments) for key=value filters on
    the metadata, in SQL (SQLite's JSON functions) so that no document is loaded for them."""
    items = sorted((where or {}).items())
    args = [a for k, v in items for a in (f'$.metadata."{k}"', str(v))]
    return "".join(" AND json_extract(d.info, ?) = ?" for _ in items), args


S = TypeVar("S", bound="IndexStore")  # `Index.open` gives an Index


class IndexStore:
    """Read (and, while building, write) access to one index directory."""

    def __init__(self, path: str | os.PathLike[str], manifest: dict[str, Any] | None = None):
        self.path = Path(path)
        self._manifest = manifest
        self._graph: nx.MultiDiGraph[str] | None = None
        self._db = _connect(self.path)

    @classmethod
    def create(cls: type[S], path: str | os.PathLike[str]) -> S:
        (Path(path) / VECTORS).mkdir(parents=True, exist_ok=True)
        store = cls(path)
        store._db.executescript(_SCHEMA_SQL)
        return store

    @classmethod
    def open(cls: type[S], path: str | os.PathLike[str]) -> S:
        """Open a complete index, or raise IndexFormatError saying what is wrong and the fix."""
        return cls(path, read_manifest(Path(path)))

    def reload(self) -> None:
        """Read the version now at `path`: an update published new files, the old connection reads the replaced ones."""
        manifest = read_manifest(self.path)
        self.close()
        self._manifest, self._graph, self._db = manifest, None, _connect(self.path)

    @property
    def manifest(self) -> dict[str, Any]:
        if self._manifest is None:
            p = self.path / MANIFEST
            self._manifest = json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}
        return self._manifest

    def close(self) -> None:
        self._db.close()

    def add_documents(self, docs: Iterable[Document]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR IGNORE INTO documents (id, source, text, info) VALUES (?, ?, ?, ?)",
                [(d.id, d.source, d.text, _info_json(d)) for d in docs],
            )

    def add_chunks(self, chunks: Sequence[Chunk]) -> None:
        # Source ids derive from chunk ids, so citations of unchanged text survive an update.
        sids = short_ids((c.id for c in chunks), taken=self.source_ids().values())
        with self._db:
            self._db.executemany(
                'INSERT INTO chunks (sid, id, doc_id, idx, start, "end", n_tokens, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
                [(sids[c.id], c.id, c.doc_id, c.index, c.start, c.end, c.n_tokens, c.text) for c in chunks],
            )
            self._db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")

    def _one(self, sql: str, key: object) -> sqlite3.Row:
        row: sqlite3.Row | None = self._db.execute(sql, (key,)).fetchone()
        if row is None:
            raise KeyError(key)
        return row

    @staticmethod
    def _document(r: sqlite3.Row) -> Document:
        # An index written before documents had units has no info column: plain documents.
        info = json.loads(r["info"]) if "info" in r.keys() and r["info"] else {}
        units = tuple((label, at) for label, at in info.get("units", ()))
        return Document(r["id"], r["text"], r["source"], units, info.get("metadata", {}), info.get("sha256", ""))

    @staticmethod
    def _chunk(r: sqlite3.Row) -> Chunk:
        return Chunk(r["id"], r["doc_id"], r["idx"], r["text"], r["start"], r["end"], r["n_tokens"])

    def documents(self) -> list[Document]:
        return [self._document(r) for r in self._db.execute("SELECT * FROM documents ORDER BY rowid")]

    def document(self, doc_id: str) -> Document:
        return self._document(self._one("SELECT * FROM documents WHERE id = ?", doc_id))

    def chunks(self) -> list[Chunk]:
        rows = self._db.execute(  # in document order, as they were added
            "SELECT c.* FROM chunks c JOIN documents d ON d.id = c.doc_id ORDER BY d.rowid, c.idx"
        )
        return [self._chunk(r) for r in rows]

    def chunk(self, chunk_id: str) -> Chunk:
        return self._chunk(self._one("SELECT * FROM chunks WHERE id = ?", chunk_id))

    def chunks_by_id(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks of these ids, in that order (a few queries, not one per chunk)."""
        found: dict[str, Chunk] = {}
        wanted = list(dict.fromkeys(chunk_ids))
        for i in range(0, len(wanted), 500):  # under SQLite's bound on query parameters
            part = wanted[i : i + 500]
            rows = self._db.execute(f"SELECT * FROM chunks WHERE id IN ({','.join('?' * len(part))})", part)
            found.update((c.id, c) for c in map(self._chunk, rows))
        if missing := [c for c in wanted if c not in found]:
            raise KeyError(f"no chunk {missing[0]!r} in {self.path}")
        return [found[c] for c in chunk_ids]

    def chunk_by_sid(self, sid: int) -> Chunk:
        return self._chunk(self._one("SELECT * FROM chunks WHERE sid = ?", int(sid)))

    def source_ids(self) -> dict[str, int]:
        """chunk id -> short source id (sid), the number answers and reports cite."""
        return {r[0]: r[1] for r in self._db.execute("SELECT id, sid FROM chunks")}

    def sources(self) -> dict[str, tuple[int, str]]:
        """chunk id -> (sid, text): what report generation cites."""
        return {r[0]: (r[1], r[2]) for r in self._db.execute("SELECT id, sid, text FROM chunks")}

    def keyword_search(
        self, query: str, limit: int = 10, where: Mapping[str, str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over chunk texts (SQLite FTS5, Porter stemming), of documents whose metadata has each
        `where` key=value. Returns (chunk id, score), best first."""
        terms = sorted({t.lower() for t in _FTS_TOKEN.findall(query)})
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        cond, args = _where_sql(where)
        rows = self._db.execute(
            "SELECT c.id, bm25(chunks_fts) AS s FROM chunks_fts JOIN chunks c ON c.sid = chunks_fts.rowid "
            f"JOIN documents d ON d.id = c.doc_id WHERE chunks_fts MATCH ?{cond} ORDER BY s LIMIT ?",
            (match, *args, int(limit)),
        ).fetchall()
        return [(r[0], -float(r[1])) for r in rows]  # FTS5's bm25 is lower-is-better

    def chunk_ids_where(self, where: Mapping[str, str]) -> set[str]:
        """The chunks of documents whose metadata has each key=value (as strings)."""
        cond, args = _where_sql(where)
        rows = self._db.execute(f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE 1{cond}", args)
        return {r[0] for r in rows}

    def metadata_keys(self) -> list[str]:
        """Every metadata key of the documents ([] for an index written before metadata)."""
        try:
            rows = self._db.execute("SELECT DISTINCT j.key FROM documents d, json_each(d.info, '$.metadata') j")
        except sqlite3.OperationalError:  # no info column
            return []
        return sorted(r[0] for r in rows)

    def save_graph(self, graph: nx.MultiDiGraph[str]) -> None:
        from tiny_graphrag.index.graph import save_graph

        save_graph(graph, self.path / GRAPH)
        self._graph = graph

    def graph(self) -> nx.MultiDiGraph[str]:
        """The knowledge graph, loaded once (its hash was checked when the index was opened)."""
        if self._graph is None:
            from tiny_graphrag.index.graph import load_graph

            self._graph = load_graph(self.path / GRAPH)  # a missing file: IndexFormatError, with the fix
        return self._graph

    def save_communities(self, communities: Sequence[Community]) -> None:
        rows = [
            (c.id, c.level, c.parent, *map(json.dumps, (list(c.children), list(c.nodes), [list(e) for e in c.edges])))
            for c in communities
        ]
        with self._db:
            self._db.execute("DELETE FROM communities")
            self._db.executemany(
                "INSERT INTO communities (id, level, parent, children, nodes, edges) VALUES (?, ?, ?, ?, ?, ?)", rows
            )

    def communities(self) -> list[Community]:
        out = []
        for r in self._db.execute("SELECT * FROM communities ORDER BY level, rowid").fetchall():
            children, nodes, edges = (json.loads(r[k]) for k in ("children", "nodes", "edges"))
            edges = tuple(map(tuple, edges))
            out.append(Community(r["id"], r["level"], tuple(nodes), r["parent"], children=tuple(children), edges=edges))
        return out

    def save_reports(self, reports: Sequence[Report]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO reports (community_id, level, rating, body) VALUES (?, ?, ?, ?)",
                [(r.community_id, r.level, r.rating, json.dumps(asdict(r), ensure_ascii=False)) for r in reports],
            )

    def reports(self, level: int | None = None) -> list[Report]:
        sql = "SELECT body FROM reports" + (" WHERE level = ?" if level is not None else "") + " ORDER BY rowid"
        rows = self._db.execute(sql, (() if level is None else (level,))).fetchall()
        return [
            Report(**{**d, "findings": tuple(Finding(**f) for f in d.get("findings", ()))})
            for d in (json.loads(body) for (body,) in rows)
        ]

    # ---- RAPTOR tree (its summary vectors are the "tree" vectors) --------------------------
    def save_tree(self, nodes: Sequence[TreeNode]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO tree_nodes (id, layer, body) VALUES (?, ?, ?)",
                [(n.id, n.layer, json.dumps(asdict(n), ensure_ascii=False)) for n in nodes],
            )

    def tree(self) -> list[TreeNode]:
        """The summary nodes, lowest layer first ([] for an index without a tree)."""
        try:
            rows = self._db.execute("SELECT body FROM tree_nodes ORDER BY layer, rowid").fetchall()
        except sqlite3.OperationalError:  # an index written before trees existed has no such table
            return []
        return [
            TreeNode(**{**d, "children": tuple(d["children"]), "chunks": tuple(d["chunks"])})
            for d in (json.loads(body) for (body,) in rows)
        ]

    def save_vectors(self, name: str, ids: Sequence[str], matrix: np.ndarray) -> None:
        if len(ids) != len(matrix):
            raise ValueError(f"vectors '{name}': {len(ids)} ids for {len(matrix)} rows")
        folder = self.path / VECTORS
        folder.mkdir(exist_ok=True)
        np.save(folder / f"{name}.npy", np.asarray(matrix, dtype=np.float32), allow_pickle=False)
        (folder / f"{name}.ids.json").write_text(json.dumps(list(ids)), encoding="utf-8")

    def vectors(self, name: str) -> tuple[list[str], np.ndarray]:
        folder = self.path / VECTORS
        npy, ids = folder / f"{name}.npy", folder / f"{name}.ids.json"
        if not npy.is_file() or not ids.is_file():
            raise IndexFormatError(f"index {self.path} has no '{name}' vectors; rebuild the index")
        try:
            row_ids = json.loads(ids.read_text(encoding="utf-8"))
        except ValueError as exc:  # UnicodeDecodeError included
            raise IndexFormatError(f"{ids} is corrupt ({exc}); rebuild the index") from exc
        try:
            matrix = np.load(npy, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            # numpy's own message may advise loading with allow_pickle: never do that with an index file
            raise IndexFormatError(
                f"{npy} is not a readable vector file (a .npy array of numbers was expected); the index is "
                "damaged: rebuild it with `tiny-graphrag build ... --force`"
            ) from exc
        if not isinstance(row_ids, list) or matrix.ndim != 2 or len(row_ids) != len(matrix):
            shape = "x".join(map(str, matrix.shape))
            count = len(row_ids) if isinstance(row_ids, list) else "no list of"
            raise IndexFormatError(
                f"the '{name}' vectors of {self.path} do not match their ids ({count} ids in {ids.name} for a {shape} "
                f"array in {npy.name}); the index is damaged: rebuild it with `tiny-graphrag build ... --force`"
            )
        if unknown := self._unknown_ids(name, row_ids):
            raise IndexFormatError(
                f"the '{name}' vectors of {self.path} name ids the index does not hold (e.g. {unknown[0]!r} in "
                f"{ids.name}); the index is damaged: rebuild it with `tiny-graphrag build ... --force`"
            )
        return row_ids, matrix

    def _unknown_ids(self, name: str, row_ids: list[str]) -> list[str]:
        """Vector ids with no record of their kind (a search would fail on them far from the cause)."""
        kinds: dict[str, Callable[[], set[str]]] = {
            "chunks": lambda: set(self.source_ids()),
            "reports": lambda: {r[0] for r in self._db.execute("SELECT community_id FROM reports")},
            "entities": lambda: set(self.graph().nodes),
            "tree": lambda: set(self.source_ids()) | {n.id for n in self.tree()},
        }
        if name not in kinds:
            return []
        known = kinds[name]()
        return [i for i in row_ids if not isinstance(i, str) or i not in known]

    def has_vectors(self, name: str) -> bool:
        return (self.path / VECTORS / f"{name}.npy").is_file()

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        """Write the manifest last, with hashes of every file, making the index complete."""
        self._db.commit()
        files = {
            str(p.relative_to(self.path)): sha256_file(p)
            for p in sorted(self.path.rglob("*"))
            if p.is_file()
            and p.name not in (MANIFEST, STAGING_MARKER)
            and not p.name.endswith(("-wal", "-shm", "-journal"))
        }
        manifest = {"format_version": FORMAT_VERSION, **manifest, "files": files}
        tmp = self.path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.path / MANIFEST)
        self._manifest = manifest
