"""Where a fine-tuned model is written: a hidden folder beside `out`, renamed into place once whole.

An interrupted or failed run leaves no half-written model, and `out` is replaced only when it is empty or a model of
ours holding nothing but what we wrote there (as an index is published over an index only): a user's notes, results or
another model inside it are named, never removed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tiny_graphrag.errors import OutputError, listing
from tiny_graphrag.finetune.labels import TRAINED_LABELS

MODEL_MARKERS = ("gliner_config.json", "glirel_config.json")
# What GLiNER's and GLiREL's save_pretrained and our save write: the files a model of ours written
# before `trained_labels.json` recorded its own list may hold (anything else in it is the user's).
KNOWN_FILES = frozenset(
    {
        *MODEL_MARKERS,
        "pytorch_model.bin",
        "model.safetensors",
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.txt",
        "spm.model",
        "backbone",
    }
)


def model_files(folder: Path) -> set[str] | None:
    """The names `models finetune` wrote in `folder` (None: not a model of ours). Recorded in its
    trained_labels.json; a model written before that record knew only KNOWN_FILES."""
    record = folder / TRAINED_LABELS
    if not (record.is_file() and any((folder / m).is_file() for m in MODEL_MARKERS)):
        return None
    try:
        files = json.loads(record.read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        return None
    names = set(map(str, files)) if isinstance(files, list) else set(KNOWN_FILES)
    return names | {TRAINED_LABELS}


def check_out(out: Path) -> None:
    """Refuse an --out whose replacement could cost the user anything. The folder is replaced whole,
    so only an empty folder, or a model of ours holding nothing but what we wrote there, may be:
    a user's notes, results or another model inside it are named and nothing is changed."""
    if out.exists():
        if not out.is_dir():
            raise OutputError(f"--out {out} is a file; pass a new folder (or a model folder to replace)")
        entries = sorted(p.name for p in out.iterdir())
        if not entries:
            return
        ours = model_files(out)
        if ours is None:
            what = (
                "a model that `models finetune` did not write"
                if any((out / m).is_file() for m in MODEL_MARKERS)
                else "a folder that is not a GLiNER/GLiREL model"
            )
            raise OutputError(
                f"--out {out} is {what}: refusing to replace it (it holds {listing(entries)}); nothing was "
                "changed. To fix: pass a new folder, or an empty one"
            )
        extra = [name for name in entries if name not in ours]
        if extra:
            raise OutputError(
                f"--out {out} is a fine-tuned model, but replacing it would also delete {listing(extra)}, which "
                "`models finetune` did not write there; nothing was changed. To fix: move those out of the "
                "folder, or pass a new --out"
            )


@contextmanager
def written_aside(out: Path) -> Iterator[Path]:
    """A hidden folder beside `out` to write into; on success it replaces `out`, else it is removed."""
    check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(out)
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    # `kill` (SIGTERM) as well as Ctrl-C unwinds through the clean-up below
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if on_main else None
    try:
        yield tmp
        check_out(out)  # again: the folder may have changed while the model trained
        old = None
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}"
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if on_main:
            signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _remove_stale(out: Path) -> None:
    """Folders written aside by runs killed without clean-up (SIGKILL, power loss)."""
    for p in out.parent.glob(f".{out.name}.partial-*"):
        pid = p.name.rsplit("-", 1)[-1]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(p, ignore_errors=True)
        except PermissionError:  # another user's live process
            pass
