"""Where an index may be written, and putting a finished one in place without harming anything else.

The one rule: nothing outside an index is ever removed or overwritten. A build may publish over an existing path only if
that path is an index (it has our manifest) or an empty folder; with `force`, also over an unfinished index (only index
files in it, no manifest). Anything else is refused before any work starts, and checked again at the moment of
publishing. The inputs and the output may not overlap, so a build can never replace the documents it reads.

A build writes into a staging folder beside the output (same filesystem, so the final move is an atomic rename). Staging
folders carry a marker file, and only folders with that marker are ever cleaned up. The index's model-call cache lives
in a folder of its own beside it, named after it (`.NAME.cache/`, see `cache_folder`), so it survives a rebuild and lets
an interrupted build resume, and it can never meet another program's files."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tiny_graphrag.errors import OutputError, TinyGraphRAGError

MANIFEST = "manifest.json"
GRAPH, DATABASE, VECTORS = "graph.pkl", "index.sqlite", "vectors"  # the index's files (store.py's layout)
# What a build writes; an unfinished index holds only these.
INDEX_FILES = {MANIFEST, GRAPH, DATABASE, f"{DATABASE}-journal", VECTORS, f"{MANIFEST}.tmp"}
STAGING_MARKER = ".tiny-graphrag-staging"


def is_index(path: Path) -> bool:
    """A finished index: a folder holding our manifest."""
    return path.is_dir() and (path / MANIFEST).is_file()


def is_unfinished_index(path: Path) -> bool:
    """A folder holding only index files and no manifest: a build that did not finish."""
    names = {p.name for p in path.iterdir()}
    return bool(names) and names <= INDEX_FILES


def real_path(path: Path) -> Path:
    # os.path.realpath, unlike Path.resolve on Python 3.11, never raises on a link loop
    return Path(os.path.realpath(path))


def is_inside(a: Path, b: Path) -> bool:
    """a is b or lies inside b (both resolved)."""
    return a == b or b in a.parents


def check_output(out_dir: Path, inputs: Iterable[Path] = (), *, force: bool = False) -> Path:
    """The output folder with links resolved, or OutputError if writing it could cost the user anything."""
    out = Path(os.path.abspath(out_dir))
    # A link named as --out stands for the folder it points to: the build stages beside that
    # folder and replaces it, so the final rename never crosses filesystems and the link stays.
    real = real_path(out)
    if is_inside(real_path(Path.cwd()), real):
        raise OutputError(
            f"--out {out_dir} is the current directory or one of its parents: an index needs a folder of "
            "its own, e.g. --out graphs/NAME"
        )
    if real.exists() or out.is_symlink():
        if not real.is_dir():
            raise OutputError(
                f"--out {out_dir} is an existing file, not an index folder: choose a new folder, e.g. "
                f"--out graphs/{out.stem or 'NAME'}"
            )
        if not is_index(real) and any(real.iterdir()):
            unfinished = is_unfinished_index(real)
            if not (force and unfinished):
                hint = " (it looks like an unfinished index: add --force to replace it)" if unfinished else ""
                raise OutputError(
                    f"--out {out_dir} is a folder that is not a tiny-graphrag index and is not empty{hint}; "
                    "nothing was changed. A build replaces only an existing index: choose a new or empty "
                    "folder, e.g. --out graphs/NAME"
                )
    for item in inputs:
        src = real_path(Path(item))
        if is_inside(real, src):
            raise OutputError(
                f"--out {out_dir} lies inside the input {item}: the index would be read as input and could "
                "replace your documents. Choose an output outside the inputs, e.g. --out graphs/NAME"
            )
        if is_inside(src, real):
            raise OutputError(
                f"the input {item} lies inside --out {out_dir}, which the build replaces: move the documents "
                "out of it or choose another --out"
            )
    return real


def cache_folder(out_dir: Path) -> Path:
    """The index's own model-call cache folder: beside it (a rebuild replaces the index folder, and a
    build that is interrupted before its first publish has no index folder yet), named after it."""
    return out_dir.parent / f".{out_dir.name}.cache"


def staging_dir(out_dir: Path) -> Path:
    """A fresh staging folder beside out_dir, marked as ours."""
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = out_dir.parent / f".{out_dir.name}.building-{os.getpid()}"
        if tmp.exists():
            if not (tmp / STAGING_MARKER).is_file():
                raise OutputError(f"{tmp} exists and is not a tiny-graphrag staging folder: move it away and rerun")
            shutil.rmtree(tmp)
        tmp.mkdir()
        (tmp / STAGING_MARKER).write_text("a tiny-graphrag build in progress; removed when it ends\n")
    except PermissionError as exc:
        raise _unwritable(out_dir, exc) from exc
    return tmp


def _unwritable(out_dir: Path, exc: OSError) -> OutputError:
    """Said by build, add and remove alike (only build has --out)."""
    return OutputError(
        f"cannot write the index {out_dir} or beside it ({exc.strerror}: {exc.filename}). To fix: build into a "
        f"folder you can write to (--out ~/graphs/NAME); to add to or remove from this index, copy it to such a "
        "folder and update the copy"
    )


def clean_stale_staging(out_dir: Path) -> None:
    """Remove staging folders left by builds that were killed (ours only: they carry the marker)."""
    for p in out_dir.parent.glob(f".{out_dir.name}.building-*"):
        if not (p / STAGING_MARKER).is_file():
            continue
        try:
            pid = int(p.name.rsplit("-", 1)[1])
            os.kill(pid, 0)  # still running: leave it alone
        except (ValueError, ProcessLookupError):
            shutil.rmtree(p, ignore_errors=True)
        except PermissionError:
            pass


def publish(tmp_dir: Path, out_dir: Path, *, force: bool = False) -> None:
    """Move a finished build into place, replacing an older index only once the new one is whole."""
    check_output(out_dir, force=force)  # again: the path may have changed while the build ran
    (tmp_dir / STAGING_MARKER).unlink(missing_ok=True)
    old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
    if out_dir.exists():
        os.replace(out_dir, old)
    os.replace(tmp_dir, out_dir)
    shutil.rmtree(old, ignore_errors=True)


LOCK_MARKER = b"tiny-graphrag: an index is being written; removed when that ends\n"


@contextmanager
def index_lock(out_dir: Path) -> Iterator[None]:
    """Hold the write lock of one index, or fail at once if another process holds it.

    The lock is a file beside the index (inside it, it would move away with the old version at publish). The kernel
    releases it when the holder dies, kill -9 included; the file is removed at the end only when it carries our marker,
    so a user's file of that name is never touched."""
    path = out_dir.parent / f".{out_dir.name}.lock"
    while True:
        try:
            out_dir.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(fd, LOCK_MARKER)
            except FileExistsError:
                try:
                    fd = os.open(path, os.O_RDONLY)
                except FileNotFoundError:  # its holder just removed it: try again
                    continue
        except PermissionError as exc:
            raise _unwritable(out_dir, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputError(
                f"the index {out_dir} is being built or updated by another process (it holds {path}): wait "
                "for it to finish, then rerun; nothing was changed"
            ) from None
        try:  # the previous holder may have removed the file between our open and our lock
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield
    finally:
        try:
            if os.pread(fd, len(LOCK_MARKER) + 1, 0) == LOCK_MARKER:
                path.unlink(missing_ok=True)  # while still locked, so nobody can hold the old file
        finally:
            os.close(fd)


def disk_full_error(exc: OSError, where: Path) -> TinyGraphRAGError | None:
    if exc.errno == errno.ENOSPC:
        return TinyGraphRAGError(
            f"the disk is full while writing the index under {where}: free some space and rerun the "
            "build (nothing was published; finished model calls are cached and will not be redone)"
        )
    return _unwritable(where, exc) if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) else None


def check_target(out: Path, index_dir: Path, force: bool, folder_files) -> Path:
    """An export's output path, checked: nothing that is not ours is replaced, and never inside the index."""
    real = real_path(out)
    if is_inside(real, real_path(index_dir)):
        raise OutputError(
            f"--out {out} lies inside the index {index_dir}, which a rebuild replaces: "
            "write the export elsewhere, e.g. --out exports/NAME"
        )
    if folder_files is None:  # one file
        if real.is_dir():
            raise OutputError(f"--out {out} is a folder: give a file name, e.g. --out {out / 'graph'}")
        try:
            kind = out.stat().st_mode  # through links: /dev/stdout is a link to a pipe or a terminal
        except OSError:
            kind = None
        if kind is not None and not stat.S_ISREG(kind):
            raise OutputError(
                f"--out {out} is not a regular file (a device, pipe or terminal): the output is written to a "
                "file (through a temporary copy beside it). To fix: give a file name, e.g. --out exports/graph"
            )
        if real.exists() and not force:
            raise OutputError(f"--out {out} exists: choose a new name, or add --force to replace that file")
        _make_folder(real.parent, out)
        return real
    if real.exists() and not real.is_dir():
        raise OutputError(f"--out {out} is a file: this format writes a folder of files ({', '.join(folder_files)})")
    taken = [name for name in folder_files if (real / name).exists()]
    if taken and not force:
        raise OutputError(
            f"--out {out} already holds {', '.join(taken)}: choose a new folder, or add --force to "
            "replace those files (nothing else in the folder is touched)"
        )
    if any((real / name).is_dir() for name in taken):
        raise OutputError(f"--out {out} holds a folder named like an export file ({', '.join(taken)}): move it away")
    _make_folder(real, out)
    return real


def _make_folder(folder: Path, out: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file in the way, or a folder we may not write in
        blocker = next((p for p in (folder, *folder.parents) if p.exists()), None)
        why = f"{blocker} is a file" if blocker is not None and not blocker.is_dir() else exc.strerror or str(exc)
        raise OutputError(
            f"cannot create the folder {folder} for --out {out} ({why}). To fix: choose an --out in a folder "
            "you can write to"
        ) from exc


def write_atomic(path: Path, write: Callable[[IO[Any]], object], mode: str = "w") -> None:
    """Write through a temporary sibling, so an interrupted export never leaves half a file."""
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    text = "b" not in mode
    try:
        with open(tmp, mode, encoding="utf-8" if text else None, newline="" if text else None) as fh:
            write(fh)
        os.replace(tmp, path)
    except OSError as exc:  # a read-only folder, a full disk: say where and what to do, not a traceback
        fix = f"choose an --out in a folder you can write to ({path.parent} is not writable)"
        if exc.errno == errno.ENOSPC:
            fix = "free some disk space and rerun"
        raise OutputError(f"cannot write {path} ({exc.strerror or exc}). To fix: {fix}") from exc
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # the folder may be unreadable too: nothing of ours is there then
            pass
