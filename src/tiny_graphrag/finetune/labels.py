"""The labels a fine-tuned model was trained on, recorded in its folder, and the zero-shot warning."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

from tiny_graphrag.errors import InputError, listing

log = logging.getLogger(__name__)

TRAINED_LABELS = "trained_labels.json"


def write_trained_labels(folder: Path, kind: str, labels: Iterable[str], **extra: object) -> None:
    data = {"kind": kind, "labels": sorted(set(labels)), **extra}
    (folder / TRAINED_LABELS).write_text(json.dumps(data, indent=1), encoding="utf-8")


def trained_labels(folder: Path) -> list[str] | None:
    """The labels recorded by `models finetune`, or None for a model trained elsewhere."""
    f = Path(folder) / TRAINED_LABELS
    if not f.is_file():
        return None
    try:
        return [str(x) for x in json.loads(f.read_text(encoding="utf-8"))["labels"]]
    except (ValueError, KeyError, TypeError):
        log.warning("%s is unreadable; not checking which labels the model was trained on", f)
        return None


def recorded_threshold(folder: Path, default: float = 0.5) -> float:
    """The score threshold chosen on the eval set at training time (`default` when none was)."""
    f = Path(folder) / TRAINED_LABELS
    try:
        value = json.loads(f.read_text(encoding="utf-8")).get("threshold") if f.is_file() else None
    except ValueError:
        value = None
    return float(value) if isinstance(value, (int, float)) else default


def unseen(labels: Iterable[str], trained: Iterable[str]) -> list[str]:
    """The labels not among the trained ones (case is ignored: the prompts of uncased encoders are)."""
    known = {t.lower() for t in trained}
    return [lab for lab in labels if lab.lower() not in known]


def warn_zero_shot(folder: Path, labels: Iterable[str], what: str) -> list[str]:
    """Warn about each of `labels` the model in `folder` was never trained on; returns them."""
    if (trained := trained_labels(folder)) is None:
        return []
    if missing := unseen(labels, trained):
        log.warning(
            "%s model %s was never trained on %s (its training data had no example): it still predicts %s "
            "zero-shot, with weak results. To fix: fine-tune it on labelled examples (`tiny-graphrag models finetune`)",
            what,
            folder,
            ", ".join(repr(m) for m in missing),
            "that label" if len(missing) == 1 else "those labels",
        )
    return missing


def labels_in_common(folder: Path, gold_labels: Iterable[str], what: str, *, zero_shot: bool = False) -> list[str]:
    """The gold labels to score a model on: those it was trained on (all of them with `zero_shot`, or
    for a model without a record). None in common is an InputError."""
    gold = sorted(set(gold_labels))
    trained = trained_labels(folder)
    if trained is None or zero_shot:
        if trained is not None:
            warn_zero_shot(folder, gold, what)
        return gold
    common = [g for g in gold if not unseen([g], trained)]
    if not common:
        raise InputError(
            f"the evaluation data has no {what} label in common with the model at {folder}: the data has "
            f"{listing(gold)}, the model was trained on {listing(trained)}. To fix: evaluate on data with the "
            "model's labels, fine-tune it on yours first, or pass --zero-shot to score it on labels it never saw"
        )
    if left := [g for g in gold if g not in common]:
        log.warning("not scoring %s labels the model was never trained on: %s", what, listing(left))
    return common
