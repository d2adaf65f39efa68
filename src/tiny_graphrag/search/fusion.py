"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, 2009)."""

from __future__ import annotations

from typing import Hashable, Sequence, TypeVar

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
    scores: dict[T, float] = {}
    first_seen: dict[T, int] = {}
    for ranking, weight in zip(rankings, weights):
        seen: set[T] = set()
        for rank, doc in enumerate(ranking, start=1):
            if doc in seen:
                continue
            seen.add(doc)
            first_seen.setdefault(doc, len(first_seen))
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
    fused = sorted(scores.items(), key=lambda item: (-item[1], first_seen[item[0]]))
    return fused[:limit] if limit is not None else fused
