"""Reading input documents: .txt/.md files, directories of them, and raw strings.

What an input is (the rule, in `input_paths`): a `Path` is always a path. A string is a
path when it names something that exists, or when it is one line without whitespace (a mistyped
`docs/notes.txt` is then an error, never indexed as text); any other string is document text.
The command line passes every input as a path.

Text is decoded strictly as UTF-8 (a BOM is dropped), or as UTF-16/UTF-32 when the file starts
with their byte-order mark; line ends are kept as they are, so that every character offset in
the index points into exactly the text a user can reopen.
"""

from __future__ import annotations

import codecs
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tiny_graphrag.errors import InputError
from tiny_graphrag.records import Document, content_id

log = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown")
RAW_TEXT = "<text:"  # the source of a document given as a string, not a file
# Longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

Input = str | os.PathLike


@dataclass(frozen=True)
class LoadedInputs:
    documents: list[Document]
    skipped: tuple[str, ...]  # files in input folders that are not of a supported type


def load_documents(inputs: Input | Sequence[Input]) -> list[Document]:
    """Documents from paths (files or directories) and raw strings, de-duplicated by content."""
    return collect_documents(inputs).documents


def collect_documents(inputs: Input | Sequence[Input]) -> LoadedInputs:
    """`load_documents`, also returning the unsupported files that directories held."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    skipped: list[str] = []
    docs: dict[str, Document] = {}  # by id: the first of each content
    n_raw = 0
    for item in inputs:
        if isinstance(item, os.PathLike) or is_path_string(item):
            files, skipped_here = _expand(Path(item))
            skipped += skipped_here
            new = [read_document(p) for p in files]
        else:
            new = [document_from_text(str(item), source=f"{RAW_TEXT}{n_raw}>")]
            n_raw += 1
        for doc in new:
            if doc.id in docs:
                log.warning("skipping %s: same content as %s", doc.source, docs[doc.id].source)
            else:
                docs[doc.id] = doc
    if not docs:
        raise InputError("no documents given: pass .txt/.md files, directories of them, or text strings")
    if skipped:
        shown = ", ".join(skipped[:10]) + (f" and {len(skipped) - 10} more" if len(skipped) > 10 else "")
        log.warning(
            "skipped %d file(s) of unsupported types (supported: %s): %s",
            len(skipped),
            ", ".join(SUPPORTED_SUFFIXES),
            shown,
        )
    return LoadedInputs(list(docs.values()), tuple(skipped))


def input_paths(inputs: Input | Sequence[Input]) -> list[Path]:
    """The inputs that are paths; the others are document text."""
    items = [inputs] if isinstance(inputs, (str, os.PathLike)) else inputs
    return [Path(i) for i in items if isinstance(i, os.PathLike) or is_path_string(i)]


def is_path_string(item: str) -> bool:
    """The rule for strings: a path if it exists, or if it is one line without whitespace."""
    try:
        if os.path.lexists(item):
            return True
    except (OSError, ValueError):  # too long for a file name, or a NUL byte: text
        return False
    return not any(ch.isspace() for ch in item) and len(item) <= 4096


def _expand(path: Path) -> tuple[list[Path], list[str]]:
    """The supported files a path stands for, and the unsupported files a directory holds."""
    if path.is_symlink() and not path.exists():
        raise InputError(f"input {path} is a broken symbolic link (or a link loop); pass the file it should name")
    if not path.exists():
        raise InputError(f"input {path} does not exist: pass an existing .txt/.md file or directory")
    if path.is_file():
        if path.suffix.lower() not in SUPPORTED_SUFFIXES:
            raise InputError(
                f"{path}: unsupported file type '{path.suffix}'; supported: {', '.join(SUPPORTED_SUFFIXES)} "
                "(convert other formats to text first)"
            )
        return [path], []
    if not path.is_dir():
        raise InputError(f"input {path} is neither a file nor a directory; pass .txt/.md files or directories")
    files, skipped = [], []
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path)
        if any(part.startswith(".") for part in rel.parts) or not p.is_file():
            continue  # hidden files and folders (.git, .DS_Store, an index's .cache) are not documents
        (files if p.suffix.lower() in SUPPORTED_SUFFIXES else skipped).append(p)
    if not files:
        raise InputError(f"directory {path} holds no {'/'.join(SUPPORTED_SUFFIXES)} files")
    return files, [str(p) for p in skipped]


def read_document(path: str | os.PathLike) -> Document:
    """Read one text file, refusing binary, undecodable and empty files with a clear error."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), None)
    if encoding is not None:  # UTF-16/32 hold NUL bytes, so they are recognised before the binary check
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{path} starts with a {encoding.upper()} byte-order mark but is not valid {encoding.upper()} "
                f"(offset {exc.start}); convert it to UTF-8, e.g. `iconv -f {encoding} -t utf-8`"
            ) from exc
        log.info("%s: decoded as %s", path, encoding.upper())
        return document_from_text(text.lstrip("\ufeff"), source=str(path))
    if b"\x00" in data:  # anywhere: a text file never holds NUL bytes
        raise InputError(
            f"{path} looks like a binary file (it contains NUL bytes at offset {data.index(0)}); pass a UTF-8 text file"
        )
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
