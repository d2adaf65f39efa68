"""Fusing rankings: reciprocal rank fusion (Cormack, Clarke & Büttcher, 2009) and min-max score fusion."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[T]],
    *,
    k: float = 60.0,
    weights: Sequence[float] | None = None,
    limit: int | None = None,
) -> list[tuple[T, float]]:
    """Fuse rankings (best first) into one: score(d) = sum_i w_i / (k + rank_i(d)), ranks from 1.

    A document absent from a ranking gets nothing from it. Ties keep the order of first
    appearance (earlier rankings first), so the result is deterministic. A repeated id within one
    ranking counts at its best rank only.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    scores: dict[T, float] = {}  # first appearance first: the stable sort keeps that order among ties
    for ranking, weight in zip(rankings, weights):
        seen: set[T] = set()
        for rank, doc in enumerate(ranking, start=1):
            if doc in seen:
                continue
            seen.add(doc)
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])[:limit]


def score_fusion(
    rankings: Sequence[Sequence[tuple[T, float]]],
    weights: Sequence[float],
    *,
    limit: int | None = None,
) -> list[tuple[T, float]]:
    """Fuse scored rankings: score(d) = sum_i w_i * (s_i(d) - min_i) / (max_i - min_i).

    Each ranking's scores are min-max scaled over the documents it returned (a document it did
    not return counts as its worst). Unlike RRF this keeps how far apart the scores are: a
    ranking whose scores are all equal says nothing about the order and adds nothing (the fusion
    backs off to the others), and a keyword ranking with one clear hit passes it on. Ties keep
    the order of first appearance, so the result is deterministic.
    """
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    if any(w < 0 for w in weights):
        raise ValueError(f"fusion weights must be >= 0, got {list(weights)}")
    scores: dict[T, float] = {}  # first appearance first: the stable sort keeps that order among ties
    for ranking, weight in zip(rankings, weights):
        best: dict[T, float] = {}
        for doc, s in ranking:
            scores.setdefault(doc, 0.0)
            if doc not in best or s > best[doc]:
                best[doc] = float(s)
        if not best:
            continue
        lo, hi = min(best.values()), max(best.values())
        if hi <= lo:
            continue
        for doc, s in best.items():
            scores[doc] += weight * (s - lo) / (hi - lo)
    return sorted(scores.items(), key=lambda item: -item[1])[:limit]


def peak_weight(scores: Sequence[float], backoff: float, rank: int = 5) -> float:
    """How much a keyword ranking says about the order, 0..1: min(1, (s_1 / s_rank - 1) / backoff).

    A ranking whose best score is hardly above its `rank`-th (BM25 over a question whose words
    are common to many passages) is flat: min-max scaling would stretch its small differences
    over the whole range, so its weight goes to 0 and the dense order stands; a ranking whose
    best is (1 + backoff) times its `rank`-th or more counts in full. Fewer than `rank` scores,
    or a non-positive one there: one or a few clear hits, full weight."""
    if backoff <= 0:
        raise ValueError(f"backoff must be > 0, got {backoff}")
    if len(scores) < rank or scores[rank - 1] <= 0:
        return 1.0
    return max(0.0, min(1.0, (scores[0] / scores[rank - 1] - 1.0) / backoff))
