"""Naive search: hybrid chunk retrieval (hybrid.py: dense cosine and FTS5 BM25 rankings fused), then one answer.

A small reader (SearchRun.reader) reads the best sentences of the best passages (evidence.py), with a second retrieval
for the question joined with its best sentence; a large one reads the passages whole, in rank order, until the window's
budget is full."""

from __future__ import annotations

from tiny_graphrag.search.answer import SearchRun
from tiny_graphrag.search.config import NaiveConfig
from tiny_graphrag.search.context import build_naive_context
from tiny_graphrag.search.index import SearchIndex
from tiny_graphrag.search.passages import answer_from_passages
from tiny_graphrag.search.prompts import NAIVE_CITATIONS
from tiny_graphrag.search.result import SearchResult, StreamingResult


def search_naive(
    index: SearchIndex, run: SearchRun, config: NaiveConfig, *, stream: bool
) -> SearchResult | StreamingResult:
    room = run.answer_room(NAIVE_CITATIONS)
    with run.timer("embed_query"):
        qvec = index.embed_query(run.query)
    with run.timer("retrieve"):
        ranked = index.hybrid.rank(run.query, qvec, where=run.where)
    run.details["ranking"] = {"dense": ranked.dense[:10], "keyword": ranked.keyword[:10], "fused": ranked.fused[:10]}
    relevant = ranked.relevant(config.min_similarity)
    if run.reader == "small":
        return answer_from_passages(index, run, ranked.ids("fused"), qvec, stream=stream, relevant=relevant)
    with run.timer("context"):
        ids = ranked.ids("fused")[: config.top_chunks] if relevant else []
        chunks = index.store.chunks_by_id(ids)
        built = build_naive_context(chunks, index.sid_of, room, run.counter, index.places(chunks))
    run.details["section_tokens"] = dict(built.section_tokens)
    return run.answer_context(built, NAIVE_CITATIONS, stream=stream, cite=("Sources",))
