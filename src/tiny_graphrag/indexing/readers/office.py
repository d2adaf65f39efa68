"""Word documents (.docx, python-docx): paragraphs and headings in order, tables as rows of text."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from tiny_graphrag.config import DocumentsConfig
from tiny_graphrag.errors import InputError, require
from tiny_graphrag.records import Document

from .text import check_unpacked, text_document


def _unzipped(path: Path, data: bytes, config: DocumentsConfig) -> io.BytesIO:
    """The .docx, its parts read within `max_unpacked_mb` and stored: zipfile unpacks a part read a MiB at a
    time in bounded steps, but one read whole (as python-docx does) at once, whatever size its header says."""
    out, size = io.BytesIO(), 0
    with zipfile.ZipFile(io.BytesIO(data)) as z, zipfile.ZipFile(out, "w") as copy:
        for info in z.infolist():
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):  # bzip2, LZMA: not bounded
                raise ValueError(f"its part {info.filename} uses compression method {info.compress_type}, not Word's")
            with z.open(info) as f, copy.open(info.filename, "w", force_zip64=True) as part:
                while chunk := f.read(2**20):
                    size += len(chunk)
                    check_unpacked(path, size, config)
                    part.write(chunk)
    return out


def read(path: Path, data: bytes, config: DocumentsConfig, notes: list[str]) -> list[Document]:
    docx = require("docx", "documents", "reading Word (.docx) files")
    try:
        document = docx.Document(_unzipped(path, data, config))
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
    except InputError:
        raise
    except Exception as exc:  # a damaged zip, a missing part, bad XML
        raise InputError(
            f"{path} is not a readable Word document ({type(exc).__name__}: {exc}): it is damaged, or not a "
            ".docx (old .doc files are not read). To fix: open it in Word or LibreOffice and save it as .docx again"
        ) from exc
    text = "\n\n".join(b for b in blocks if b)
    return [text_document(text, str(path), metadata={k: str(v) for k, v in meta.items() if v})]
