"""Plain text: decoded strictly, so that every offset points into exactly the text a user can reopen.

UTF-8 (a BOM is dropped), or UTF-16/UTF-32 when the file starts with their byte-order mark; line ends are kept as they
are. Binary and undecodable files are refused, naming the fix."""

from __future__ import annotations

import codecs
import logging
from pathlib import Path

from tiny_graphrag.config import DocumentsConfig
from tiny_graphrag.errors import InputError
from tiny_graphrag.records import Document, new_document

log = logging.getLogger(__name__)

# Longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def bom_encoding(data: bytes) -> str | None:
    return next((enc for bom, enc in BOMS if data.startswith(bom)), None)


DOCUMENT_FIX = (
    "and is no document format we read: pass a UTF-8 text file, or a PDF, DOCX or Parquet file (told by content; "
    "if it should be one, it is damaged)"
)


def decode(data: bytes, path: Path | str, binary_fix: str = DOCUMENT_FIX) -> str:
    """The text of a file's bytes, or an InputError naming the file and how to convert it
    (`binary_fix`: what to do about a binary file, for files that are not documents)."""
    encoding = bom_encoding(data)
    if encoding is not None:  # UTF-16/32 hold NUL bytes, so they are recognised before the binary check
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{path} starts with a {encoding.upper()} byte-order mark but is not valid {encoding.upper()} "
                f"(offset {exc.start}); convert it to UTF-8, e.g. `iconv -f {encoding} -t utf-8`"
            ) from exc
        log.info("%s: decoded as %s", path, encoding.upper())
        return text.lstrip("\ufeff")
    if b"\x00" in data:  # anywhere: a text file never holds NUL bytes
        raise InputError(
            f"{path} looks like a binary file (it contains NUL bytes at offset {data.index(0)}) {binary_fix}"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        path = Path(path)
        # 0x80-0x9f are quotes and dashes in Windows-1252 but control characters in Latin-1
        source = "latin1" if any(b in data for b in b"\x81\x8d\x8f\x90\x9d") else "cp1252"  # bytes 1252 lacks
        raise InputError(
            f"{path} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            f"convert it first, e.g. `iconv -f {source} -t utf-8 {path} > {path.stem}.utf8{path.suffix}`"
        ) from exc


def read(path: Path, data: bytes, config: DocumentsConfig, notes: list[str]) -> list[Document]:
    return [text_document(decode(data, path), str(path))]


def check_unpacked(path: Path, size: int, config: DocumentsConfig) -> None:
    """Refuse a compressed file (DOCX, Parquet) that unpacks to more than `max_unpacked_mb`."""
    if size > config.max_unpacked_mb * 2**20:
        raise InputError(
            f"{path} unpacks to more than {config.max_unpacked_mb} MiB (a zip bomb?), so it was not read. To fix: if "
            "it is a genuine document, raise the bound with --max-unpacked-mb N (DocumentsConfig(max_unpacked_mb=N))"
        )


def text_document(text: str, source: str, **kw) -> Document:
    """A document, refusing one with no text (the error names it)."""
    if not text.strip():
        raise InputError(f"{source} is empty (no text to index); remove it from the inputs")
    return new_document(text, source, **kw)
