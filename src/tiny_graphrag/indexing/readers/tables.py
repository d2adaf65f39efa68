"""Tables: CSV/TSV, JSON Lines, JSON (a list of objects) and Parquet, one document per row.

As GraphRAG's input options: the text is the `text_columns` joined (default: the column "text"), `title_column` titles
the row, and every other column is kept as the row's metadata."""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tiny_graphrag.config import DocumentsConfig
from tiny_graphrag.errors import InputError, listing, require
from tiny_graphrag.records import Document, new_document

from .text import check_unpacked, decode


def _csv_rows(path: Path, data: bytes, notes: list[str]) -> list[dict[str, Any]]:
    text = decode(data, path)
    try:  # only the delimiter is guessed: the sniffer's guesses of quoting cut quoted fields apart
        delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
    except csv.Error:  # one column, or too little to tell: the standard comma
        delimiter = ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    # The field limit is process-wide: raised for this read only (no field is longer than the text)
    limit = csv.field_size_limit(max(csv.field_size_limit(), len(text)))
    try:
        table = [row for row in reader if row]  # a blank line is no row
    finally:
        csv.field_size_limit(limit)
    if len(table) < 2:  # empty, or a header alone
        return []
    header, seen = [], Counter[str]()
    for name in table[0]:  # a name given twice: the later column is "name (2)", not lost
        seen[name] += 1
        header.append(f"{name} ({seen[name]})" if seen[name] > 1 else name)
    header += [f"column {n}" for n in range(len(header) + 1, max(map(len, table)) + 1)]  # cells past the header
    if renamed := [h for h, name in itertools.zip_longest(header, table[0]) if h != name]:
        past = [n for n, row in enumerate(table[1:], 1) if len(row) > len(table[0])]
        notes.append(
            f"{path}: kept as the columns {listing(renamed)}: a name its header repeats, or cells past its header"
            f"{f' (row(s) {listing(past)})' if past else ''}. To name them, edit the header"
        )
    return [dict(zip(header, row)) for row in table[1:]]


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


def _rows(path: Path, data: bytes, kind: str, config: DocumentsConfig, notes: list[str]) -> list[Any]:
    if kind == "csv":
        return _csv_rows(path, data, notes)
    if kind == "parquet":
        try:
            table = require("pyarrow.parquet", "export", "reading Parquet tables").ParquetFile(io.BytesIO(data))
            meta = table.metadata  # the sizes it declares, unpacked: a bound before anything is unpacked
            check_unpacked(path, sum(meta.row_group(n).total_byte_size for n in range(meta.num_row_groups)), config)
            return table.read().to_pylist()
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise InputError(f"{path} is not a readable Parquet file ({exc}): it is damaged; write it again") from exc
    return _json_rows(path, data, lines=kind == "jsonl")


def read(path: Path, data: bytes, config: DocumentsConfig, notes: list[str], kind: str = "csv") -> list[Document]:
    rows = _rows(path, data, kind, config, notes)
    if not rows:
        raise InputError(f"{path} holds no rows, so nothing to index. To fix: add rows, or leave it out of the inputs")
    if not all(isinstance(r, Mapping) for r in rows):
        raise InputError(f"{path} is not a table: its rows must be objects with named columns (keys)")
    columns = list(dict.fromkeys(k for r in rows for k in r))
    text_cols = config.text_columns or ("text",)
    wanted = [*text_cols, *([config.title_column] if config.title_column else [])]
    if missing := [c for c in wanted if c not in columns]:
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
        meta = {str(k): str(v) for k, v in r.items() if k not in text_cols and v not in (None, "")}
        if config.title_column and (title := meta.pop(config.title_column, "")):
            meta["title"] = title
        docs.append(new_document(text, str(path), units=[(f"row {n}", 0)], metadata=meta))
    if empty:
        notes.append(f"{path}: {empty} of {len(rows)} row(s) have no text in {', '.join(text_cols)}: not indexed")
    return docs
