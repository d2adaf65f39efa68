"""Reading input documents: files, directories of them, and raw text.

What an input is (the rule, in `input_paths`): a `Path` is always a path, and a `Text` is always document text (the
explicit way to index a string: `build_index([Text("Obama was born in Hawaii.")], ...)`). A plain string is a path when
it names something that exists, or when it looks like one: one line that has no whitespace, contains a path separator,
or ends in a document extension (.txt, .md, ...). Such a string that does not exist is an error naming it (a mistyped
`my docs/notes.txt` is never indexed as text). Any other string is document text. The command line passes every input as
a path.

Each file is read by the reader its content calls for (readers/: text, PDF, DOCX, HTML, e-mail, tables). A file that
cannot be read (damaged, encrypted, a missing column) is an error naming it and the fix, logged, and the rest of the
inputs are still read; only when nothing at all can be read does the build stop. Files of formats not read are listed in
one line, by extension. Inside input folders, hidden names (starting with ".") are not documents; links that lead
nowhere, links to folders and folders that cannot be read are skipped with a warning naming them; a link to a file
outside the folder is read, with a warning naming where it leads."""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from tiny_graphrag.config import DocumentsConfig
from tiny_graphrag.errors import InputError
from tiny_graphrag.indexing.readers import SUFFIXES, kind_of, read_file
from tiny_graphrag.indexing.readers.text import text_document
from tiny_graphrag.records import Document

log = logging.getLogger(__name__)

# A one-line string ending in one of these names a file: a missing one is an error, not text.
DOCUMENT_SUFFIXES = (*SUFFIXES, ".doc", ".rtf", ".pptx", ".xlsx", ".odt")
RAW_TEXT = "<text:"  # the source of a document given as a string, not a file


@dataclass(frozen=True)
class Text:
    """Document text given explicitly, never read as a path: `build_index([Text("...")], ...)`."""

    text: str


Input = str | os.PathLike[str] | Text


@dataclass(frozen=True)
class LoadedInputs:
    documents: list[Document]
    skipped: tuple[str, ...]  # files in input folders that are not of a format we read
    failed: tuple[str, ...] = ()  # files that could not be read: their sources (an update keeps their old version)
    notes: tuple[str, ...] = ()  # warnings for the build summary (unreadable files, scanned pages, one line of skips)


def load_documents(inputs: Input | Sequence[Input], config: DocumentsConfig = DocumentsConfig()) -> list[Document]:
    """Documents from paths (files or directories) and raw strings, de-duplicated by content."""
    return collect_documents(inputs, config).documents


def collect_documents(
    inputs: Input | Sequence[Input], config: DocumentsConfig = DocumentsConfig(), known: Iterable[Document] = ()
) -> LoadedInputs:
    """`load_documents`, also returning what was skipped or failed. `known` (an index's documents):
    a document file read before and unchanged since is taken from there, not read again."""
    if isinstance(inputs, (str, os.PathLike, Text)):
        inputs = [inputs]
    by_file: dict[tuple[str, str], list[Document]] = defaultdict(list)
    for d in known:
        if d.file_sha256:
            by_file[d.source, d.file_sha256].append(d)
    skipped: list[Path] = []
    failed: dict[str, str] = {}  # source -> the error
    notes: list[str] = []
    docs: dict[str, Document] = {}  # by id: the first of each content
    n_raw = 0
    for item in inputs:
        new: list[Document] = []
        if _is_path(item):
            for p, explicit in _expand(Path(item), given_as_string=isinstance(item, str)):
                try:
                    if not explicit and kind_of(p) is None:
                        skipped.append(p)
                        continue
                    new += read_file(p, config, notes, by_file)
                except InputError as exc:  # logged below when the rest is built, else it is the error
                    failed[str(p)] = str(exc)
        else:
            text = item.text if isinstance(item, Text) else str(item)
            new = [text_document(text, f"{RAW_TEXT}{n_raw}>")]
            n_raw += 1
        for doc in new:
            if doc.id in docs:
                log.warning("skipping %s: same content as %s", doc.source, docs[doc.id].source)
            else:
                docs[doc.id] = doc
    if skipped:
        notes.append(skipped_line(skipped))
    if not docs:
        if len(failed) == 1:
            raise InputError(next(iter(failed.values())))
        why = "; ".join([*failed.values(), *notes])
        raise InputError(f"no documents to index{': ' + why if why else ''}; pass readable files or Text(...) strings")
    for message in failed.values():
        log.error("%s", message)
    if failed:
        notes.append(
            f"{len(failed)} file(s) could not be read, so were not indexed: {', '.join(failed)} (the log says why)"
        )
    for note in notes:  # once, here; a build's summary lists them again
        log.warning("%s", note)
    return LoadedInputs(list(docs.values()), tuple(map(str, skipped)), tuple(failed), tuple(notes))


def skipped_line(paths: Sequence[Path]) -> str:
    """One line for the files of formats not read, by extension: ".png (3: a.png, ...), .pptx (1: b.pptx)"."""
    by_ext: dict[str, list[str]] = defaultdict(list)
    for p in paths:
        by_ext[p.suffix.lower() or "(no extension)"].append(p.name)
    parts = [
        f"{ext} ({len(names)}: {', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
        for ext, names in sorted(by_ext.items(), key=lambda x: -len(x[1]))
    ]
    listed = ", ".join(parts)
    return f"skipped {len(paths)} file(s) of formats not read (not text, PDF, DOCX, HTML, e-mail or a table): {listed}"


def input_paths(inputs: Input | Sequence[Input]) -> list[Path]:
    """The inputs that are paths; the others are document text."""
    items = [inputs] if isinstance(inputs, (str, os.PathLike, Text)) else inputs
    return [Path(i) for i in items if _is_path(i)]


def _is_path(item: Input) -> TypeGuard[str | os.PathLike[str]]:
    return not isinstance(item, Text) and (isinstance(item, os.PathLike) or is_path_string(str(item)))


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


def _expand(path: Path, *, given_as_string: bool = False) -> list[tuple[Path, bool]]:
    """The files a path stands for, each with whether it was named itself (else found in a folder)."""
    if path.is_symlink() and not path.exists():
        raise InputError(f"input {path} is a broken symbolic link (or a link loop); pass the file it should name")
    if not path.exists():
        text_hint = (
            "; to index the string itself as text, pass it as Text(...) (from tiny_graphrag import Text)"
            if given_as_string
            else ""
        )
        raise InputError(f"input {str(path)!r} does not exist: pass an existing file or directory{text_hint}")
    if path.is_file():
        return [(path, True)]
    if not path.is_dir():
        raise InputError(f"input {path} is neither a file nor a directory; pass document files or directories")
    files: list[Path] = []
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
                if p.is_symlink() and not p.resolve().is_relative_to(path.resolve()):
                    log.warning(
                        "%s links to %s, outside %s: read too. To leave it out, remove the link", p, p.resolve(), path
                    )
                files.append(p)
    if not files:
        note = ""
        if hidden:
            shown = ", ".join(p.name for p in hidden[:3]) + (", ..." if len(hidden) > 3 else "")
            note = (
                f"; its hidden names ({shown}) are not read: rename them without the "
                "leading '.', or pass such a file as an input by its path"
            )
        raise InputError(f"directory {path} holds no files{note}")
    return [(p, False) for p in sorted(files)]


def read_document(path: str | os.PathLike[str], config: DocumentsConfig = DocumentsConfig()) -> Document:
    """The one document of a file (a table's first row, an mbox's first message), with a clear error
    for binary, undecodable, damaged and empty files."""
    notes: list[str] = []
    docs = read_file(Path(path), config, notes)
    if not docs:
        raise InputError("; ".join(notes) or f"{path} holds no text to index")
    return docs[0]


def document_from_text(text: str, *, source: str) -> Document:
    return text_document(text, source)
