"""Micro precision/recall/F1 with 95% bootstrap intervals: the one scorer of `models evaluate` and bench.

Entities count as found when span and type match exactly; relations when head span, tail span and label match. Counts
are summed over examples (micro); the interval resamples examples with replacement (percentile bootstrap, fixed seed),
so it reflects how much the score depends on which examples were drawn."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from tiny_graphrag.finetune.data import Example, labels_of
from tiny_graphrag.finetune.labels import labels_in_common, recorded_threshold

BOOTSTRAP_SAMPLES = 1000


@dataclass(frozen=True)
class Score:
    precision: float
    recall: float
    f1: float
    tp: int
    predicted: int
    gold: int
    f1_low: float  # 95% bootstrap interval of f1
    f1_high: float
    examples: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)

    def line(self) -> str:
        return (
            f"P {100 * self.precision:.1f}  R {100 * self.recall:.1f}  F1 {100 * self.f1:.1f} "
            f"[95% {100 * self.f1_low:.1f}-{100 * self.f1_high:.1f}]  "
            f"({self.tp} correct of {self.predicted} predicted, {self.gold} gold, {self.examples} examples)"
        )


def prf(tp: float, predicted: float, gold: float) -> tuple[float, float, float]:
    p = tp / predicted if predicted else 0.0
    r = tp / gold if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def score(
    predicted: Sequence[Iterable[Hashable]],
    gold: Sequence[Iterable[Hashable]],
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
) -> Score:
    """Micro P/R/F1 of predicted vs gold item sets, one set per example (duplicates count once)."""
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} examples")
    rows = [(len(set(p) & set(g)), len(set(p)), len(set(g))) for p, g in zip(predicted, gold)]
    table = np.asarray(rows, dtype=np.int64).reshape(-1, 3)  # [tp, predicted, gold] per example
    tp, n_pred, n_gold = (int(x) for x in table.sum(axis=0)) if len(table) else (0, 0, 0)
    p, r, f = prf(tp, n_pred, n_gold)
    low = high = f
    if len(table) > 1 and samples:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(table), size=(samples, len(table)))
        sums = table[idx].sum(axis=1)  # (samples, 3)
        sp = np.divide(sums[:, 0], sums[:, 1], out=np.zeros(samples), where=sums[:, 1] > 0)
        sr = np.divide(sums[:, 0], sums[:, 2], out=np.zeros(samples), where=sums[:, 2] > 0)
        sf = np.divide(2 * sp * sr, sp + sr, out=np.zeros(samples), where=(sp + sr) > 0)
        low, high = (float(x) for x in np.percentile(sf, [2.5, 97.5]))
    return Score(p, r, f, tp, n_pred, n_gold, low, high, len(table))


def entity_items(ex: Example) -> set[tuple[int, int, str]]:
    return {(e.first, e.last, e.label) for e in ex.entities}


def relation_items(ex: Example) -> set[tuple[int, int, int, int, str]]:
    ents = ex.entities
    return {
        (ents[r.head].first, ents[r.head].last, ents[r.tail].first, ents[r.tail].last, r.label) for r in ex.relations
    }


def score_entities(predicted: Sequence[Example], gold: Sequence[Example]) -> Score:
    return score([entity_items(p) for p in predicted], [entity_items(g) for g in gold])


def score_relations(predicted: Sequence[Example], gold: Sequence[Example]) -> Score:
    return score([relation_items(p) for p in predicted], [relation_items(g) for g in gold])


@dataclass(frozen=True)
class Evaluator:
    """`evaluate_gliner` and `evaluate_glirel`: a model's score on entities (GLiNER), or on the
    relations between the gold entities (GLiREL)."""

    what: str  # "entity" or "relation"
    load: Callable[[Path, str], Any]  # (model folder, device) -> model
    # (model, examples, labels, threshold[, batch_size]) -> the examples with the model's predictions
    predict: Callable[..., list[Example]]

    def labels(self, examples: Sequence[Example]) -> list[str]:
        """The labels of this kind (entity types or relation labels) in the examples."""
        return labels_of(examples)[0 if self.what == "entity" else 1]

    def above(self, predicted: Sequence[Example], threshold: float) -> list[Example]:
        """The predictions (entities, or relations) scored at least `threshold`."""
        if self.what == "entity":
            return [
                ex.keep_entities([i for i, e in enumerate(ex.entities) if e.score >= threshold]) for ex in predicted
            ]
        return [replace(ex, relations=tuple(r for r in ex.relations if r.score >= threshold)) for ex in predicted]

    def score(self, predicted: Sequence[Example], gold: Sequence[Example]) -> Score:
        return (score_entities if self.what == "entity" else score_relations)(predicted, gold)

    def __call__(
        self,
        model_dir: Path,
        examples: Sequence[Example],
        *,
        threshold: float | None = None,
        device: str = "cpu",
        zero_shot: bool = False,
    ) -> Score:
        """P/R/F1 of the model at `model_dir` on `examples`, over the labels it was trained on that
        the examples use (all of theirs for a model without a record)."""
        use = labels_in_common(model_dir, self.labels(examples), self.what, zero_shot=zero_shot)
        model = self.load(model_dir, device)
        at = recorded_threshold(model_dir) if threshold is None else threshold
        predicted = self.predict(model, examples, use, at)
        if self.what == "entity":
            gold = [replace(ex, entities=tuple(e for e in ex.entities if e.label in use)) for ex in examples]
        else:
            gold = [replace(ex, relations=tuple(r for r in ex.relations if r.label in use)) for ex in examples]
        return self.score(predicted, gold)
