"""Reading one file into documents, the reader chosen by what the file holds, not by its name.

PDF, DOCX and Parquet are told by their first bytes; HTML and e-mail by how their text begins; CSV and JSON tables
(which any text may resemble) by their extension; other text by .txt/.md (text unless it begins as an mbox does: a From_
line with a time and a year, then headers). A reader the file's documents (one, or one per table row or mbox message)
and adds warnings to `notes`. Each format's library is optional: `pip install "tiny-graphrag[documents]"`."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import zipfile
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

from tiny_graphrag.config import DocumentsConfig
from tiny_graphrag.errors import InputError
from tiny_graphrag.records import Document

from . import mail, office, pdf, tables, text, web

Reader = Callable[[Path, bytes, DocumentsConfig, list], list[Document]]
READERS: dict[str, Reader] = {
    "text": text.read,
    "pdf": pdf.read,
    "docx": office.read,
    "html": web.read,
    "eml": mail.read_eml,
    "mbox": mail.read_mbox,
    **{kind: partial(tables.read, kind=kind) for kind in ("csv", "jsonl", "json", "parquet")},
}
# What a name promises; the content decides (a PDF named .txt is read as a PDF).
SUFFIXES = {
    **dict.fromkeys((".txt", ".md", ".markdown", ".text"), "text"),
    ".pdf": "pdf",
    ".docx": "docx",
    **dict.fromkeys((".html", ".htm", ".xhtml"), "html"),
    ".eml": "eml",
    ".mbox": "mbox",
    **dict.fromkeys((".csv", ".tsv"), "csv"),
    **dict.fromkeys((".jsonl", ".ndjson"), "jsonl"),
    ".json": "json",
    ".parquet": "parquet",
}
_HTML = re.compile(r"<!doctype html|<html[\s>]|<head[\s>]|<body[\s>]")
_HEADER = re.compile(r"([A-Za-z0-9-]+):")
_FROM_LINE = re.compile(r"From \S+ .*\b\d\d:\d\d\b.*\b\d{4}\b")  # "From ann@x.org Mon Mar  1 10:00:00 2021"


def _is_mail(head: str) -> bool:
    """A block of RFC 5322 header lines (From and one of Subject/Date/To/Message-ID) before a blank line."""
    names = set()
    for line in re.split(r"\r?\n\r?\n", head, maxsplit=1)[0].splitlines():
        if line[:1] in (" ", "\t"):  # a folded header goes on
            continue
        m = _HEADER.match(line)
        if not m:
            return False
        names.add(m.group(1).lower())
    return "from" in names and bool(names & {"subject", "date", "to", "message-id"})


def kind_of(path: Path) -> str | None:
    """The reader for a file ("pdf", "text", ...), judged by its content; None: not a format we read."""
    try:
        with open(path, "rb") as f:
            head = f.read(8192)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    named = SUFFIXES.get(path.suffix.lower())
    # PDF readers allow junk before the header within the first KB; a text file may only mention it
    if head.startswith(b"%PDF-") or (named in (None, "pdf") and b"%PDF-" in head[:1024]):
        return "pdf"
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"PK\x03\x04"):  # a zip: a .docx, or another office format we do not read
        try:
            with zipfile.ZipFile(path) as z:
                return "docx" if "word/document.xml" in z.namelist() else None
        except (zipfile.BadZipFile, OSError):
            return "docx" if named == "docx" else None  # a damaged .docx: its reader names the problem
    if named is None and b"\x00" in head and text.bom_encoding(head) is None:
        return None  # binary, and its name promises no format we read
    return _text_kind(head, named)


def _text_kind(head: bytes, named: str | None) -> str | None:
    enc = text.bom_encoding(head) or "utf-8"
    start = head.decode(enc, "replace").lstrip("\ufeff \t\r\n")
    if start.startswith("<") and _HTML.search(start.lower()):
        return "html"
    # A .txt/.md opening "From ..." or with From:/Date: lines is a note; an mbox needs a real From_ line
    from_line = _FROM_LINE.match(start) if named == "text" else start.startswith("From ")
    if from_line and _is_mail(start.partition("\n")[2]):
        return "mbox"
    if _is_mail(start) and named != "text":
        return "eml"
    if named in ("csv", "jsonl", "json"):
        return named
    # A .pdf/.docx/.html... that is none of these: read as text (a binary one is refused there, by name).
    return "text" if named else None


def read_file(
    path: Path, config: DocumentsConfig, notes: list[str], known: Mapping[tuple[str, str], list[Document]] | None = None
) -> list[Document]:
    """The documents of one file; `known` ((source, file sha256) -> documents) spares reading an
    unchanged document file again. An InputError names the file and the fix."""
    if (kind := kind_of(path)) is None:
        raise InputError(
            f"{path}: not a format tiny-graphrag reads (unsupported file type; it reads "
            f"{', '.join(sorted(READERS))}): convert it to one of them, or leave it out of the inputs"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if kind == "text":
        return READERS[kind](path, data, config, notes)
    sha = hashlib.sha256(data).hexdigest()
    if known and (str(path), sha) in known:
        return known[str(path), sha]
    return [dataclasses.replace(d, file_sha256=sha) for d in READERS[kind](path, data, config, notes)]
