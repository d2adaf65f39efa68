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
    from htmldate import find_date  # trafilatura's date reader, installed with it

    info, tree = trafilatura.extract_metadata(html), trafilatura.load_html(html)
    meta = {k: getattr(info, k, None) for k in ("title", "author")} if info is not None else {}
    if tree is not None:  # a date the page declares (meta tags, JSON-LD), never a year from its text
        declared = tree.xpath('//meta | //script[@type="application/ld+json"]')
        tree.clear()
        tree.extend(declared)
        meta["date"] = find_date(tree, extensive_search=False, original_date=True)
    return [text_document(html_text(html), str(path), metadata={k: str(v) for k, v in meta.items() if v})]
