"""Saved web pages: the main content (trafilatura), without navigation, footers and boilerplate."""

from __future__ import annotations

from pathlib import Path

from tiny_graphrag.config import DocumentsConfig
from tiny_graphrag.errors import require
from tiny_graphrag.records import Document

from .text import decode, text_document


def html_text(html: str) -> str:
    """The main text of a page; a page too short or odd for that keeps all of its visible text."""
    trafilatura = require("trafilatura", "documents", "reading HTML pages")
    main = trafilatura.extract(html, include_tables=True, include_comments=False, favor_recall=True)
    return main or trafilatura.html2txt(html) or ""


def read(path: Path, data: bytes, config: DocumentsConfig, notes: list[str]) -> list[Document]:
    html = decode(data, path)
    trafilatura = require("trafilatura", "documents", "reading HTML pages")
    info = trafilatura.extract_metadata(html)
    meta = {k: getattr(info, k, None) for k in ("title", "author", "date")} if info is not None else {}
    return [text_document(html_text(html), str(path), metadata={k: str(v) for k, v in meta.items() if v})]
