"""Reading input documents: .txt/.md files, directories of them, and raw text.

What an input is (the rule, in `input_paths`): a `Path` is always a path, and a `Text` is always
document text (the explicit way to index a string: `build_index([Text("Obama was born in
Hawaii.")], ...)`). A plain string is a path when it names something that exists, or when it
looks like one: one line that has no whitespace, contains a path separator, or ends in a
document extension (.txt, .md, ...). Such a string that does not exist is an error naming it
(a mistyped `my docs/notes.txt` is never indexed as text). Any other string is document text.
The command line passes every input as a path.

Text is decoded strictly as UTF-8 (a BOM is dropped), or as UTF-16/UTF-32 when the file starts
with their byte-order mark; line ends are kept as they are, so that every character offset in
the index points into exactly the text a user can reopen. Inside input folders, hidden names
(starting with ".") are not documents; links that lead nowhere, links to folders and folders
that cannot be read are skipped with a warning naming them.
"""

from __future__ import annotations

import codecs
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from tiny_graphrag.errors import InputError
from tiny_graphrag.records import Document, content_id

log = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown")
# A one-line string ending in one of these names a file: a missing one is an error, not text.
DOCUMENT_SUFFIXES = (*SUPPORTED_SUFFIXES, ".pdf", ".doc", ".docx", ".rtf", ".html", ".htm", ".csv", ".json")
RAW_TEXT = "<text:"  # the source of a document given as a string, not a file
# Longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


@dataclass(frozen=True)
class Text:
    """Document text given explicitly, never read as a path: `build_index([Text("...")], ...)`."""

    text: str


Input = str | os.PathLike[str] | Text


@dataclass(frozen=True)
class LoadedInputs:
    documents: list[Document]
    skipped: tuple[str, ...]  # files in input folders that are not of a supported type


def load_documents(inputs: Input | Sequence[Input]) -> list[Document]:
    """Documents from paths (files or directories) and raw strings, de-duplicated by content."""
    return collect_documents(inputs).documents


def collect_documents(inputs: Input | Sequence[Input]) -> LoadedInputs:
    """`load_documents`, also returning the unsupported files that directories held."""
    if isinstance(inputs, (str, os.PathLike, Text)):
        inputs = [inputs]
    skipped: list[str] = []
    docs: dict[str, Document] = {}  # by id: the first of each content
    n_raw = 0
    for item in inputs:
        if _is_path(item):
            files, skipped_here = _expand(Path(item), given_as_string=isinstance(item, str))
            skipped += skipped_here
            new = [read_document(p) for p in files]
        else:
            new = [document_from_text(item.text if isinstance(item, Text) else str(item), source=f"{RAW_TEXT}{n_raw}>")]
            n_raw += 1
        for doc in new:
            if doc.id in docs:
                log.warning("skipping %s: same content as %s", doc.source, docs[doc.id].source)
            else:
                docs[doc.id] = doc
    if not docs:
        raise InputError("no documents given: pass .txt/.md files, directories of them, or Text(...) strings")
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
    items = [inputs] if isinstance(inputs, (str, os.PathLike, Text)) else inputs
    return [Path(i) for i in items if _is_path(i)]


def _is_path(item: Input) -> TypeGuard[str | os.PathLike[str]]:
    if isinstance(item, Text):
        return False
    return isinstance(item, os.PathLike) or is_path_string(str(item))


def is_path_string(item: str) -> bool:
    """The rule for strings: a path if it exists, or if it looks like one (one line without
    whitespace, or with a path separator, or ending in a document extension)."""
    try:
        if os.path.lexists(item):
            return True
    except (OSError, ValueError):  # too long for a file name, or a NUL byte: text
        return False
    if len(item) > 4096 or "\n" in item or "\r" in item:
        return False
    if not any(ch.isspace() for ch in item):
        return True
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return any(sep in item for sep in separators) or item.rstrip().lower().endswith(DOCUMENT_SUFFIXES)


def _expand(path: Path, *, given_as_string: bool = False) -> tuple[list[Path], list[str]]:
    """The supported files a path stands for, and the unsupported files a directory holds."""
    if path.is_symlink() and not path.exists():
        raise InputError(f"input {path} is a broken symbolic link (or a link loop); pass the file it should name")
    if not path.exists():
        text_hint = (
            "; to index the string itself as text, pass it as Text(...) (from tiny_graphrag import Text)"
            if given_as_string
            else ""
        )
        raise InputError(f"input {str(path)!r} does not exist: pass an existing .txt/.md file or directory{text_hint}")
    if path.is_file():
        if path.suffix.lower() not in SUPPORTED_SUFFIXES:
            raise InputError(
                f"{path}: unsupported file type '{path.suffix}'; supported: {', '.join(SUPPORTED_SUFFIXES)} "
                "(convert other formats to text first)"
            )
        return [path], []
    if not path.is_dir():
        raise InputError(f"input {path} is neither a file nor a directory; pass .txt/.md files or directories")
    files: list[Path] = []
    skipped: list[Path] = []
    hidden: list[Path] = []

    def unreadable(exc: OSError) -> None:  # os.walk would drop a folder it cannot list silently
        log.warning(
            "cannot read the folder %s (%s): its files were not indexed. To fix: make it readable "
            "(e.g. chmod u+rx) and rerun, or move it out of %s",
            exc.filename,
            exc.strerror or exc,
            path,
        )

    for root, dirs, names in os.walk(path, onerror=unreadable):
        here = Path(root)
        dirs.sort()
        for name in [d for d in dirs if d.startswith(".")]:  # .git, an index's .cache: not documents
            hidden.append(here / name)
            dirs.remove(name)
        for name in [d for d in dirs if (here / d).is_symlink()]:
            # os.walk lists a link to a folder among the folders and does not follow it
            log.warning(
                "skipped %s: it is a link to a folder, which is not followed (a link may loop back). To "
                "fix: pass the folder it points to as an input of its own",
                here / name,
            )
        for name in sorted(names):
            p = here / name
            if name.startswith("."):  # hidden files (.DS_Store, .notes.txt) are not documents
                hidden.append(p)
            elif p.is_symlink() and not p.exists():
                log.warning(
                    "skipped %s: it is a broken symbolic link or a link loop. To fix: point it at a file, or remove it",
                    p,
                )
            elif p.is_file():
                (files if p.suffix.lower() in SUPPORTED_SUFFIXES else skipped).append(p)
    if not files:
        note = ""
        if hidden:
            shown = ", ".join(p.name for p in hidden[:3]) + (", ..." if len(hidden) > 3 else "")
            note = (
                f"; its hidden names ({shown}) are not read: rename them without the "
                "leading '.', or pass such a file as an input by its path"
            )
        raise InputError(f"directory {path} holds no {'/'.join(SUPPORTED_SUFFIXES)} files{note}")
    return sorted(files), [str(p) for p in sorted(skipped)]


def read_document(path: str | os.PathLike[str]) -> Document:
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
