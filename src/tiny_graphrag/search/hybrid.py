"""Hybrid chunk retrieval: dense cosine and FTS5 BM25 rankings, fused.

Fusion is reciprocal rank fusion (Cormack, Clarke & Büttcher, 2009) or min-max score fusion. The hybrid ranking is naive
search's retrieval, local search's text ranking and fallback, and what the retrieval benchmark (bench/retrieval_eval.py)
measures, so what is measured is what runs."""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.search.config import FusionConfig
from tiny_graphrag.search.vectors import VectorIndex

T = TypeVar("T", bound=Hashable)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[T]],
    *,
    k: float = 60.0,
    weights: Sequence[float] | None = None,
    limit: int | None = None,
) -> list[tuple[T, float]]:
    """Fuse rankings (best first) into one: score(d) = sum_i w_i / (k + rank_i(d)), ranks from 1.

    A document absent from a ranking gets nothing from it. Ties keep the order of first appearance (earlier rankings
    first), so the result is deterministic. A repeated id within one ranking counts at its best rank only."""
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    scores: dict[T, float] = {}  # first appearance first: the stable sort keeps that order among ties
    for ranking, weight in zip(rankings, weights):
        best: dict[T, int] = {}  # a repeated id counts at its first (best) rank
        for rank, doc in enumerate(ranking, start=1):
            best.setdefault(doc, rank)
        for doc, rank in best.items():
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])[:limit]


def score_fusion(rankings: Sequence[Sequence[tuple[T, float]]], weights: Sequence[float]) -> list[tuple[T, float]]:
    """Fuse scored rankings: score(d) = sum_i w_i * (s_i(d) - min_i) / (max_i - min_i).

    Each ranking's scores are min-max scaled over the documents it returned (a document it did not return counts as its
    worst). Unlike RRF this keeps how far apart the scores are: a ranking whose scores are all equal says nothing about
    the order and adds nothing (the fusion backs off to the others), and a keyword ranking with one clear hit passes it
    on. Ties keep the order of first appearance, so the result is deterministic."""
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    if any(w < 0 for w in weights):
        raise ValueError(f"fusion weights must be >= 0, got {list(weights)}")
    scores: dict[T, float] = {}  # first appearance first: the stable sort keeps that order among ties
    for ranking, weight in zip(rankings, weights):
        best: dict[T, float] = {}
        for doc, s in ranking:
            scores.setdefault(doc, 0.0)
            best[doc] = max(best.get(doc, -math.inf), float(s))
        lo, hi = min(best.values(), default=0.0), max(best.values(), default=0.0)
        for doc, s in best.items() if hi > lo else ():
            scores[doc] += weight * (s - lo) / (hi - lo)
    return sorted(scores.items(), key=lambda item: -item[1])


def peak_weight(scores: Sequence[float], backoff: float, rank: int = 5) -> float:
    """How much a keyword ranking says about the order, 0..1: min(1, (s_1 / s_rank - 1) / backoff).

    A ranking whose best score is hardly above its `rank`-th (BM25 over a question whose words are common to many
    passages) is flat: min-max scaling would stretch its small differences over the whole range, so its weight goes to 0
    and the dense order stands; a ranking whose best is (1 + backoff) times its `rank`-th or more counts in full. Fewer
    than `rank` scores, or a non-positive one there: one or a few clear hits, full weight."""
    if backoff <= 0:
        raise ValueError(f"backoff must be > 0, got {backoff}")
    if len(scores) < rank or scores[rank - 1] <= 0:
        return 1.0
    return max(0.0, min(1.0, (scores[0] / scores[rank - 1] - 1.0) / backoff))


_WORD = re.compile(r"\w+", re.UNICODE)

# Question words and function words: with FTS5's OR query every chunk matches "the", which only
# costs time and adds noise. Kept small on purpose; a query made only of these keeps its words.
STOPWORDS = frozenset(
    """a an the of in on at to for by with from into about as and or but nor not no is are was were be been
    being am do does did done has have had having it its this that these those there here what which who
    whom whose when where why how than then so if while also both either neither each any all some
    such same other another i me my we our you your he him his she her they them their one""".split()
)


def keyword_query(query: str) -> str:
    """The words of `query` for the keyword index: stopwords dropped unless nothing else is left."""
    words = _WORD.findall(query)
    kept = [w for w in words if w.lower() not in STOPWORDS]
    return " ".join(kept or words)


@dataclass(frozen=True)
class Ranked:
    """The three rankings of one query (chunk ids, best first), kept for evaluation and details."""

    dense: tuple[tuple[str, float], ...]
    keyword: tuple[tuple[str, float], ...]
    fused: tuple[tuple[str, float], ...]

    def ids(self, which: str = "fused") -> list[str]:
        return [cid for cid, _ in getattr(self, which)]

    def relevant(self, min_similarity: float) -> bool:
        """A keyword hit or a chunk similar enough; else nothing in the index is about the query."""
        return bool(self.keyword) or any(s >= min_similarity for _, s in self.dense[:1])


def fuse(dense: list[tuple[str, float]], keyword: list[tuple[str, float]], f: FusionConfig) -> list[tuple[str, float]]:
    """The two scored rankings fused as `f` says (bench/retrieval_tuning.py re-fuses with this)."""
    keyword_weight = f.keyword_weight
    if f.flat_keyword_backoff is not None:  # a flat keyword ranking counts less (fusion.peak_weight)
        keyword_weight *= peak_weight([s for _, s in keyword], f.flat_keyword_backoff)
    weights = [f.dense_weight, keyword_weight]
    if f.method == "score":
        return score_fusion([dense, keyword], weights)
    return reciprocal_rank_fusion([[c for c, _ in dense], [c for c, _ in keyword]], k=f.k, weights=weights)


class HybridRetriever:
    """Dense + keyword chunk ranking over one index, fused as FusionConfig says (RRF or score fusion)."""

    def __init__(self, store: IndexStore, chunk_vectors: VectorIndex, fusion: FusionConfig | None = None):
        self.store, self.vectors, self.fusion = store, chunk_vectors, fusion or FusionConfig()

    def rank(
        self, query: str, query_vector: np.ndarray, *, fusion: FusionConfig | None = None, where: Mapping | None = None
    ) -> Ranked:
        """Both rankings, over the chunks of documents whose metadata has each `where` key=value."""
        f = fusion or self.fusion
        words = keyword_query(query)
        allowed = self.store.chunk_ids_where(where) if where else None
        dense = self.vectors.search(query_vector, f.depth, allowed) if f.dense_weight > 0 else []
        keyword = self.store.keyword_search(words, f.depth, where) if f.keyword_weight > 0 and words else []
        return Ranked(tuple(dense), tuple(keyword), tuple(fuse(dense, keyword, f)))
