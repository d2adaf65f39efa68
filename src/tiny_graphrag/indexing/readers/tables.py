"""Tables: CSV/TSV, JSON Lines, JSON (a list of objects) and Parquet, one document per row.

As GraphRAG's input options: the text is the `text_columns` joined (default: the column "text"),
`title_column` titles the row, and every other column is kept as the row's metadata.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tiny_graphrag.config import DocumentsConfig
from tiny_graphrag.errors import InputError, listing, require
from tiny_graphrag.records import Document, new_document

from .text import decode


def _csv_rows(path: Path, data: bytes) -> list[dict[str, Any]]:
    text = decode(data, path)
    try:  # only the delimiter is guessed: the sniffer's guesses of quoting cut quoted fields apart
        delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
    except csv.Error:  # one column, or too little to tell: the standard comma
        delimiter = ","
    return list(csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter))


def _json_rows(path: Path, data: bytes, lines: bool) -> list[Any]:
    text = decode(data, path)
    if not lines:
        try:
            rows = json.loads(text)
        except ValueError as exc:
            raise InputError(f"{path} is not valid JSON ({exc}); fix it, or give it as JSON Lines (.jsonl)") from exc
        return rows if isinstance(rows, list) else [rows]
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise InputError(f"{path}, line {n} is not a JSON object ({exc}): fix or remove that line") from exc
    return rows


def _rows(path: Path, data: bytes, kind: str) -> list[Any]:
    if kind == "csv":
        return _csv_rows(path, data)
    if kind == "parquet":
        try:
            pq = require("pyarrow.parquet", "export", "reading Parquet tables")
            return pq.read_table(io.BytesIO(data)).to_pylist()
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise InputError(f"{path} is not a readable Parquet file ({exc}): it is damaged; write it again") from exc
    return _json_rows(path, data, lines=kind == "jsonl")


def read(path: Path, data: bytes, config: DocumentsConfig, notes: list[str], kind: str = "csv") -> list[Document]:
    rows = _rows(path, data, kind)
    if not all(isinstance(r, Mapping) for r in rows):
        raise InputError(f"{path} is not a table: its rows must be objects with named columns (keys)")
    columns = list(dict.fromkeys(k for r in rows for k in r))
    text_cols = config.text_columns or ("text",)
    wanted = [*text_cols, *([config.title_column] if config.title_column else [])]
    missing = [c for c in wanted if c not in columns]
    if missing:
        raise InputError(
            f"{path} has no column {', '.join(map(repr, missing))}; its columns are {listing(columns, 30)}. To fix: "
            "name the text column(s) with --text-column (repeatable) and the title with --title-column "
            "(DocumentsConfig(text_columns=..., title_column=...))"
        )
    docs, empty = [], 0
    for n, r in enumerate(rows, 1):  # rows counted from 1, the header not counted
        text = "\n\n".join(str(r[c]).strip() for c in text_cols if r.get(c) not in (None, ""))
        if not text.strip():
            empty += 1
            continue
        meta = {str(k): str(v) for k, v in r.items() if k is not None and k not in text_cols and v not in (None, "")}
        if config.title_column and (title := meta.pop(config.title_column, "")):
            meta["title"] = title
        docs.append(new_document(text, str(path), units=[(f"row {n}", 0)], metadata=meta))
    if empty:
        notes.append(f"{path}: {empty} of {len(rows)} row(s) have no text in {', '.join(text_cols)}: not indexed")
    return docs
