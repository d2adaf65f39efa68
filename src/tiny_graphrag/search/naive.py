"""Naive (vector + keyword) chunk retrieval: dense cosine and FTS5 BM25 rankings fused by RRF.

Used by naive search, by local search for its text ranking and fallback, and by the retrieval
benchmark (bench/retrieval_eval.py), so what is measured is what runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .config import FusionConfig
from .fusion import reciprocal_rank_fusion
from .vectors import VectorIndex

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


class HybridRetriever:
    """Dense + keyword chunk ranking over one index, fused by weighted reciprocal rank fusion."""

    def __init__(self, store, chunk_vectors: VectorIndex, fusion: FusionConfig | None = None):
        self.store = store
        self.vectors = chunk_vectors
        self.fusion = fusion or FusionConfig()

    def dense(self, query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        return self.vectors.search(query_vector, k)

    def keyword(self, query: str, k: int) -> list[tuple[str, float]]:
        text = keyword_query(query)
        return self.store.keyword_search(text, k) if text else []

    def rank(self, query: str, query_vector: np.ndarray, *, fusion: FusionConfig | None = None) -> Ranked:
        f = fusion or self.fusion
        dense = self.dense(query_vector, f.depth) if f.dense_weight > 0 else []
        keyword = self.keyword(query, f.depth) if f.keyword_weight > 0 else []
        fused = reciprocal_rank_fusion(
            [[c for c, _ in dense], [c for c, _ in keyword]], k=f.k, weights=[f.dense_weight, f.keyword_weight]
        )
        return Ranked(tuple(dense), tuple(keyword), tuple(fused))
