"""Word documents (.docx, python-docx): paragraphs and headings in order, tables as rows of text."""

from __future__ import annotations

import io
from pathlib import Path

from tiny_graphrag.config import DocumentsConfig
from tiny_graphrag.errors import InputError, require
from tiny_graphrag.records import Document

from .text import text_document


def read(path: Path, data: bytes, config: DocumentsConfig, notes: list[str]) -> list[Document]:
    docx = require("docx", "documents", "reading Word (.docx) files")
    try:
        document = docx.Document(io.BytesIO(data))
        blocks = []
        for block in document.iter_inner_content():  # paragraphs and tables, in reading order
            if hasattr(block, "rows"):
                for row in block.rows:  # a merged cell repeats in each column it spans: once is enough
                    cells = list(dict.fromkeys(c.text.strip() for c in row.cells))
                    blocks.append(" | ".join(c for c in cells if c))
            else:
                blocks.append(block.text.strip())
        props = document.core_properties
        meta = {"title": props.title, "author": props.author, "date": props.created and props.created.date()}
    except Exception as exc:  # a damaged zip, a missing part, bad XML
        raise InputError(
            f"{path} is not a readable Word document ({type(exc).__name__}: {exc}): it is damaged, or not a "
            ".docx (old .doc files are not read). To fix: open it in Word or LibreOffice and save it as .docx again"
        ) from exc
    text = "\n\n".join(b for b in blocks if b)
    return [text_document(text, str(path), metadata={k: str(v) for k, v in meta.items() if v})]
