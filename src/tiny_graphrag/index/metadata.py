"""What the index keeps of a document besides its text (JSON in `documents.info`), and the `where`
filter over its metadata, in SQL (SQLite's JSON functions) so that no document is loaded for it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping

from tiny_graphrag.records import Document


def info_json(d: Document) -> str | None:
    """Units, metadata and the file's sha256, as stored; None for plain text (as before they existed)."""
    info = {"units": [list(u) for u in d.units], "metadata": dict(d.metadata), "sha256": d.file_sha256}
    return json.dumps({k: v for k, v in info.items() if v}, ensure_ascii=False) if any(info.values()) else None


def document_from_row(doc_id: str, text: str, source: str, info: str | None) -> Document:
    data = json.loads(info) if info else {}
    units = tuple((label, at) for label, at in data.get("units", ()))
    return Document(doc_id, text, source, units, data.get("metadata", {}), data.get("sha256", ""))


def where_sql(where: Mapping[str, str] | None) -> tuple[str, list[str]]:
    """ " AND ..." conditions on the documents table `d` (and their arguments) for key=value filters."""
    items = sorted((where or {}).items())
    args = [a for k, v in items for a in (f'$.metadata."{k}"', str(v))]
    return "".join(" AND json_extract(d.info, ?) = ?" for _ in items), args


def chunk_ids_where(db: sqlite3.Connection, where: Mapping[str, str]) -> set[str]:
    cond, args = where_sql(where)
    return {
        r[0] for r in db.execute(f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE 1{cond}", args)
    }


def metadata_keys(db: sqlite3.Connection) -> list[str]:
    """Every metadata key of the documents ([] for an index written before metadata)."""
    try:
        rows = db.execute("SELECT DISTINCT j.key FROM documents d, json_each(d.info, '$.metadata') j")
    except sqlite3.OperationalError:  # no info column
        return []
    return sorted(r[0] for r in rows)
