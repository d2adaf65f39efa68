"""PDF, page by page, from its text layer (pypdf). No OCR: a scanned page has no text to read."""

from __future__ import annotations

import io
import os
from pathlib import Path

from tiny_graphrag.config import DocumentsConfig
from tiny_graphrag.errors import InputError, require
from tiny_graphrag.records import Document, new_document

PASSWORD_ENV = "TINY_GRAPHRAG_PDF_PASSWORD"  # tried on encrypted PDFs; never stored in an index
PAGE_BREAK = "\n\n"


def read(path: Path, data: bytes, config: DocumentsConfig, notes: list[str]) -> list[Document]:
    pypdf = require("pypdf", "documents", "reading PDF files")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(os.environ.get(PASSWORD_ENV, "")):
            raise InputError(
                f"{path} is an encrypted PDF and the password is missing or wrong: set it in the environment "
                f"variable {PASSWORD_ENV}, or save a decrypted copy (e.g. `qpdf --decrypt --password=... in.pdf "
                "out.pdf`) and index that"
            )
        pages = [page.extract_text() or "" for page in reader.pages]
        info = reader.metadata or {}
    except InputError:
        raise
    except Exception as exc:  # pypdf raises many kinds on a damaged file
        if type(exc).__name__ == "DependencyError":  # AES encryption needs the cryptography package
            raise InputError(f"{path} is AES-encrypted: reading it needs `pip install cryptography` ({exc})") from exc
        raise InputError(
            f"{path} is not a readable PDF ({type(exc).__name__}: {exc}): it is damaged or not a PDF. To fix: "
            "save it again from its source, or repair it (e.g. `qpdf in.pdf repaired.pdf`)"
        ) from exc
    empty = [n for n, text in enumerate(pages, 1) if not text.strip()]
    if empty:
        which = (
            f"any of its {len(pages)} pages" if len(empty) == len(pages) else "page " + ", ".join(map(str, empty[:20]))
        )
        more = f" and {len(empty) - 20} more" if len(empty) > 20 else ""
        notes.append(
            f"{path}: no text on {which}{more} (scanned images without a text layer?), so nothing was indexed "
            f"there. To index such pages, add a text layer with OCR first, e.g. `ocrmypdf {path} with-text.pdf`"
        )
    text, units = "", []
    for n, page in enumerate(pages, 1):
        if page.strip():
            text += PAGE_BREAK if text else ""
            units.append((f"p. {n}", len(text)))
            text += page
    if not units:
        return []
    meta = {k: str(info.get(f"/{k.capitalize()}") or "").strip() for k in ("title", "author", "subject")}
    date = str(info.get("/CreationDate") or "")  # "D:20210304..." -> "2021-03-04"
    if date.startswith("D:") and date[2:10].isdigit():
        meta["date"] = f"{date[2:6]}-{date[6:8]}-{date[8:10]}"
    return [new_document(text, str(path), units=units, metadata={k: v for k, v in meta.items() if v})]
