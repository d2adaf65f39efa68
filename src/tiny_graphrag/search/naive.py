"""Naive search: hybrid chunk retrieval (dense cosine and FTS5 BM25 rankings fused), then one answer.

The hybrid ranking is also local search's text ranking and fallback, and what the retrieval
benchmark (bench/retrieval_eval.py) measures, so what is measured is what runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.search.config import FusionConfig, NaiveConfig
from tiny_graphrag.search.context import build_naive_context
from tiny_graphrag.search.fusion import peak_weight, reciprocal_rank_fusion, score_fusion
from tiny_graphrag.search.prompts import NAIVE_CITATIONS
from tiny_graphrag.search.result import SearchResult, StreamingResult
from tiny_graphrag.search.vectors import VectorIndex

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.search.engine import QueryEngine

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
        self.store = store
        self.vectors = chunk_vectors
        self.fusion = fusion or FusionConfig()

    def rank(self, query: str, query_vector: np.ndarray, *, fusion: FusionConfig | None = None) -> Ranked:
        f = fusion or self.fusion
        words = keyword_query(query)
        dense = self.vectors.search(query_vector, f.depth) if f.dense_weight > 0 else []
        keyword = self.store.keyword_search(words, f.depth) if f.keyword_weight > 0 and words else []
        return Ranked(tuple(dense), tuple(keyword), tuple(fuse(dense, keyword, f)))


def search_naive(
    engine: QueryEngine, query: str, config: NaiveConfig, *, only_context: bool, stream: bool
) -> SearchResult | StreamingResult:
    run = engine.begin("naive", query, only_context=only_context)
    answer_tokens = engine.config.answer_max_tokens
    room = run.answer_room(NAIVE_CITATIONS, answer_tokens)
    with run.timer("embed_query"):
        qvec = engine.embed_query(query)
    with run.timer("retrieve"):
        ranked = engine.hybrid.rank(query, qvec)
    with run.timer("context"):
        ids = ranked.ids("fused")[: config.top_chunks] if ranked.relevant(config.min_similarity) else []
        built = build_naive_context(engine.store.chunks_by_id(ids), engine.sid_of, room, run.counter)
    run.details.update(
        budget=room,
        section_tokens=dict(built.section_tokens),
        ranking={"dense": ranked.dense[:10], "keyword": ranked.keyword[:10], "fused": ranked.fused[:10]},
    )
    return run.answer_context(built, NAIVE_CITATIONS, max_tokens=answer_tokens, stream=stream, cite=("Sources",))
