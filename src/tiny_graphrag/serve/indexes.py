"""The indexes a server answers from: each opened once for search, and the read-only look-ups the page and the API make
(a cited passage in its document, an entity and its neighbours, the communities and their reports).

Everything is read from the opened index (SQLite and the loaded graph), never from a path a request names, so no id can
reach a file outside the index."""

from __future__ import annotations

import dataclasses
import difflib
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from tiny_graphrag.errors import InputError, MissingDependencyError, ModelLoadError, ModelNotFoundError, listing
from tiny_graphrag.index.graph import normalize_name
from tiny_graphrag.outputs.info import index_info
from tiny_graphrag.outputs.parquet import entity_description
from tiny_graphrag.outputs.view import PALETTE
from tiny_graphrag.search.engine import QueryEngine
from tiny_graphrag.search.result import SourceChunk

log = logging.getLogger(__name__)

WINDOW = 20_000  # characters of a document sent around a cited passage
MENTIONS = 5  # mentions of an entity sent with it
MAX_GRAPH_NODES = 80  # the graph panel stays readable (and the reply small)


class NotFound(LookupError):
    """An id or name the index does not hold; the message names it (answered with 404)."""


class ServedIndex:
    """One index opened for search; `lock` keeps its retrievals one at a time (the engine is not
    thread-safe), `answering` is None or why answers cannot be generated (no model)."""

    def __init__(self, name: str, engine: QueryEngine, answering: str | None) -> None:
        self.name, self.engine, self.answering = name, engine, answering
        self.lock = threading.Lock()
        self.info = index_info(engine.path)
        # where the server keeps its models is the operator's (`tiny-graphrag info` shows it), not a client's
        self.info["models"] = {
            k: v and {a: b for a, b in v.items() if a != "path"} for k, v in self.info["models"].items()
        }
        graph = engine.index.graph
        self.key_of_hid = {d["hid"]: k for k, d in graph.nodes(data=True)}
        self.entities_in: dict[int, list[str]] = {}  # source id -> the entities mentioned in that chunk
        for k, d in graph.nodes(data=True):
            for sid in dict.fromkeys(engine.index.sid_of.get(p[1]) for p in d["provenance"]):
                if sid is not None:
                    self.entities_in.setdefault(sid, []).append(k)
        at0 = sorted((c for c in engine.index.communities if c.level == 0), key=lambda c: -len(c.nodes))
        self.colour = {k: PALETTE[n % len(PALETTE)] for n, c in enumerate(at0) for k in c.nodes}

    def source(self, sid: int) -> dict:
        """A cited text chunk (`[Data: Sources (sid)]`) in its document, with the text around it."""
        store = self.engine.store
        try:
            chunk = store.chunk_by_sid(sid)
        except (KeyError, OverflowError):  # OverflowError: beyond SQLite's integers, so surely none
            raise NotFound(
                f"no source {sid} in index '{self.name}' (a source id is a number an answer cites)"
            ) from None
        doc = store.document(chunk.doc_id)
        lo, hi = max(0, chunk.start - WINDOW), min(len(doc.text), chunk.end + WINDOW)
        meta = {k: v for k, v in dataclasses.asdict(doc).items() if k != "text"}  # page/row, when documents carry them
        unit, unit_start = doc.unit_at(chunk.start, chunk.end) or ("", 0)
        cited = SourceChunk(
            sid, chunk.id, chunk.doc_id, chunk.start, chunk.end, chunk.text, doc.source, unit, unit_start
        )
        return {
            **{k: getattr(cited, k) for k in ("id", "chunk_id", "doc_id", "start", "end", "text", "source")},
            "location": cited.location,  # "annual-report.pdf, p. 12, chars 40-310", as citations say it
            "document": {**meta, "name": Path(doc.source).name or doc.id, "length": len(doc.text)},
            "window": {"offset": lo, "text": doc.text[lo:hi]},
        }

    def entity_key(self, name: str | None = None, hid: int | None = None) -> str:
        graph = self.engine.index.graph
        if hid is not None:
            if hid not in self.key_of_hid:
                raise NotFound(f"no entity with id {hid} in index '{self.name}'")
            return self.key_of_hid[hid]
        if not name or not name.strip():
            raise InputError("give an entity's name (?name=...) or id (?id=...)")
        key = normalize_name(name)
        if key in graph:
            return key
        names = [d["name"] for _, d in graph.nodes(data=True)]
        close = difflib.get_close_matches(name, names, n=5)
        hint = f"; close names: {listing(close)}" if close else ""
        raise NotFound(f"no entity named {name!r} in index '{self.name}'{hint}")

    def entity(self, key: str) -> dict:
        """An entity: its description, where it is mentioned, its communities, reports and neighbours."""
        index = self.engine.index
        graph, d = index.graph, index.graph.nodes[key]
        mentions = [
            {"source": index.sid_of.get(chunk_id), "doc_id": doc_id, "start": start, "end": end}
            for doc_id, chunk_id, start, end in d["provenance"][:MENTIONS]
        ]
        communities = [
            {"id": c.id, "level": c.level, "title": getattr(index.reports_by_community.get(c.id), "title", None)}
            for c in index.communities
            if key in c.nodes
        ]
        return {
            **self.node(key),
            "description": entity_description(d),
            "aliases": list(d.get("aliases", [])),
            "mentions": mentions,
            "more_mentions": max(0, len(d["provenance"]) - MENTIONS),
            "communities": communities,
            "relations": [
                {"from": graph.nodes[u]["hid"], "to": graph.nodes[v]["hid"], "label": d["label"], "weight": d["weight"]}
                for u, v, d in [*graph.out_edges(key, data=True), *graph.in_edges(key, data=True)][:50]
            ],
        }

    def node(self, key: str) -> dict:
        d = self.engine.index.graph.nodes[key]
        return {"id": d["hid"], "key": key, "name": d["name"], "type": d["type"], "color": self.colour.get(key, "#999")}

    def neighbourhood(self, hids: Sequence[int], sids: Sequence[int] = ()) -> dict:
        """The entities of `hids` and those mentioned in the sources `sids`, their neighbours (the best-connected first,
        up to MAX_GRAPH_NODES) and the relations among all of them: what the graph panel draws."""
        graph = self.engine.index.graph
        keys = [self.entity_key(hid=h) for h in hids] + [k for sid in sids for k in self.entities_in.get(sid, [])]
        seeds = list(dict.fromkeys(keys))[:MAX_GRAPH_NODES]
        around = {n for k in seeds for n in (*graph.successors(k), *graph.predecessors(k))} - set(seeds)
        keep = seeds + sorted(around, key=lambda k: (-graph.degree(k), k))[: MAX_GRAPH_NODES - len(seeds)]
        shown = set(keep)
        # In the nodes' order: a subgraph view iterates a set of nodes, whose order follows the
        # process's string hashing, so the same request got its edges in another order per process.
        order = {k: i for i, k in enumerate(keep)}
        inner = sorted(graph.subgraph(keep).edges(data=True), key=lambda e: (order[e[0]], order[e[1]], e[2]["label"]))
        edges = [{"from": graph.nodes[u]["hid"], "to": graph.nodes[v]["hid"], "label": d["label"]} for u, v, d in inner]
        return {
            "nodes": [{**self.node(k), "seed": k in seeds} for k in keep],
            "edges": edges,
            "more": len(around) + len(seeds) - len(shown),
        }

    def communities(self) -> list[dict]:
        reports = self.engine.index.reports_by_community
        return [
            {"id": c.id, "level": c.level, "size": len(c.nodes), "parent": c.parent, "children": list(c.children)}
            | {k: getattr(reports.get(c.id), k, None) for k in ("title", "rating", "summary")}  # None: no report
            for c in sorted(self.engine.index.communities, key=lambda c: (c.level, -len(c.nodes), c.id))
        ]

    def report(self, community_id: str) -> dict:
        index = self.engine.index
        if (community := next((c for c in index.communities if c.id == community_id), None)) is None:
            raise NotFound(f"no community '{community_id}' in index '{self.name}' (see its communities)")
        r = index.reports_by_community.get(community_id)
        return {
            "community": community_id,
            "level": community.level,
            "entities": [self.node(k) for k in community.nodes[:MAX_GRAPH_NODES]],
            "report": None if r is None else {**dataclasses.asdict(r), "text": r.text()},
        }


def open_indexes(
    paths: list[str | os.PathLike], *, llm: str | None, n_ctx: int | None, models_dir: str | None
) -> dict[str, ServedIndex]:
    """Open every index (the CLI's errors for a path that is not one) and load the model once.

    A model named with `llm` must load; without it, an index whose build model is missing is
    still served (sources, entities, `only_context`), and says answering needs --llm."""
    served: dict[str, ServedIndex] = {}
    for given in paths:
        path = Path(given).resolve()  # errors name it so, and the app puts the index's name in its place
        if path.name in served:
            raise InputError(f"two indexes are named '{path.name}': serve folders with different names")
        engine = QueryEngine(path, models_dir=models_dir)
        if changes := {k: v for k, v in {"model": llm, "n_ctx": n_ctx}.items() if v is not None}:
            engine.change_llm_settings(**changes)
        answering = None
        try:
            _ = engine.llm  # loaded now: a bad --llm fails before the server starts, not on a question
        except (ModelNotFoundError, ModelLoadError, MissingDependencyError) as exc:
            if llm is not None:
                raise
            log.warning(
                "index %s: answering needs a model: start the server with --llm MODEL (a GGUF file). %s", path, exc
            )
            answering = (  # what a client can do; the operator's fix (and the models folder) is in the log
                "this server has no model to write answers with (its operator starts it with --llm MODEL): "
                "ask with only_context, or read sources and entities"
            )
        served[path.name] = ServedIndex(path.name, engine, answering)
    return served
