"""Reading input documents: .txt/.md files, directories of them, and raw strings.

Text is decoded strictly as UTF-8 (a BOM is dropped); line ends are kept as they are, so that
every character offset in the index points into exactly the text a user can reopen.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Iterable, Sequence

from .errors import InputError
from .records import Document, content_id

log = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown")
_BINARY_SNIFF = 8192


def load_documents(inputs: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Document]:
    """Documents from paths (files or directories) and raw strings, de-duplicated by content.

    A string that names an existing path is read as a file; any other string is document text.
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    docs: list[Document] = []
    seen: dict[str, str] = {}
    n_raw = 0
    for item in inputs:
        if isinstance(item, os.PathLike) or _looks_like_path(item):
            path = Path(item)
            if not path.exists():
                raise InputError(f"input {path} does not exist; pass an existing .txt/.md file or directory")
            new = [read_document(p) for p in _expand(path)]
        else:
            n_raw += 1
            new = [document_from_text(str(item), source=f"<text:{n_raw - 1}>")]
        for doc in new:
            if doc.id in seen:
                log.warning("skipping %s: same content as %s", doc.source, seen[doc.id])
                continue
            seen[doc.id] = doc.source
            docs.append(doc)
    if not docs:
        raise InputError("no documents given: pass .txt/.md files, directories of them, or text strings")
    return docs


def _looks_like_path(item: str) -> bool:
    # Raw text is usually long or multi-line; a path is one short line that exists or has a suffix.
    if "\n" in item or len(item) > 4096:
        return False
    try:
        return Path(item).exists() or Path(item).suffix.lower() in SUPPORTED_SUFFIXES
    except (OSError, ValueError):  # e.g. a sentence longer than a file name may be
        return False


def _expand(path: Path) -> list[Path]:
    if path.is_file():
        if path.suffix.lower() not in SUPPORTED_SUFFIXES:
            raise InputError(
                f"{path}: unsupported file type '{path.suffix}'; supported: {', '.join(SUPPORTED_SUFFIXES)} "
                "(convert other formats to text first)"
            )
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES)
    if not files:
        raise InputError(f"directory {path} holds no {'/'.join(SUPPORTED_SUFFIXES)} files")
    return files


def read_document(path: str | os.PathLike) -> Document:
    """Read one UTF-8 text file, refusing binary, undecodable and empty files with a clear error."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if b"\x00" in data[:_BINARY_SNIFF]:
        raise InputError(f"{path} looks like a binary file (it contains NUL bytes); pass a UTF-8 text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            f"convert it first, e.g. `iconv -f latin1 -t utf-8 {path} > {path.stem}.utf8{path.suffix}`"
        ) from exc
    return document_from_text(text, source=str(path))


def document_from_text(text: str, *, source: str) -> Document:
    if not text.strip():
        raise InputError(f"{source} is empty (no text to index); remove it from the inputs")
    return Document(id=content_id("doc", text), text=text, source=source)


def iter_sources(docs: Iterable[Document]) -> list[str]:
    return [d.source for d in docs]
