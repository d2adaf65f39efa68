"""Local search: the retriever's candidates packed into a context, then one answer call.

The retriever (local_retriever.py) links the query to entities (exact names and embeddings, linking.py), spreads from
them by personalized PageRank over entities and chunks (graph_index.py; seeds: the linked entities and the best hybrid
chunks at `passage_weight`, as in HippoRAG 2, with synonymy links between near-identical entity vectors at
`synonym_similarity` and sentence co-occurrence links at `cooccurrence_weight`), and ranks entities by mass (seeds
first), relationships by weight and their endpoints' degree (GraphRAG's order), each entity's most specific community,
and chunks (the best `keep_text_top` hybrid ones, then by mass plus `prior_weight` x the text score, then the hybrid
rest). When nothing links, the candidates are the hybrid ranking alone and `linked` is empty. Here the candidates'
reports and text are packed with the entities and relationships into their shares (context.py); one call answers."""

from __future__ import annotations

import dataclasses

from tiny_graphrag.search.answer import SearchRun
from tiny_graphrag.search.config import FusionConfig, LocalConfig
from tiny_graphrag.search.context import BuiltContext, build_local_context, nested_sources
from tiny_graphrag.search.index import SearchIndex
from tiny_graphrag.search.local_retriever import LocalCandidates
from tiny_graphrag.search.passages import answer_from_passages
from tiny_graphrag.search.prompts import LOCAL_CITATIONS
from tiny_graphrag.search.result import SearchResult, StreamingResult


def search_local(
    index: SearchIndex, run: SearchRun, config: LocalConfig, fusion: FusionConfig, *, stream: bool
) -> SearchResult | StreamingResult:
    cand = index.local.retrieve(run.query, None, config, fusion, where=run.where, timer=run.timer)
    nodes = index.graph.nodes
    run.details["linked_entities"] = [
        {"key": e.key, "name": nodes[e.key].get("name", e.key), "hid": nodes[e.key].get("hid")}
        | {"score": round(e.score, 4), "how": e.how, "matched": e.matched}
        for e in cand.linked
    ]
    if run.reader == "small":
        run.answer_room(LOCAL_CITATIONS)
        ids = candidate_chunks(index, run, cand, config)
        return answer_from_passages(index, run, ids, index.embed_query(run.query), stream=stream)
    built = local_context(index, run, cand, config)
    run.details.update(budgets=dict(built.details.get("budgets", {})), section_tokens=dict(built.section_tokens))
    return run.answer_context(built, LOCAL_CITATIONS, stream=stream, cite=("Sources",))


def candidate_chunks(index: SearchIndex, run: SearchRun, cand: LocalCandidates, config: LocalConfig) -> list[str]:
    """The candidates' chunk ids, best first (of the documents `run.where` keeps); none when
    nothing linked and the text ranking says nothing is relevant."""
    if not cand.linked:
        run.notes.append("no entity in the graph matched the query: the context holds text chunks only")
    relevant = bool(cand.linked) or cand.hybrid.relevant(config.text_min_similarity)
    chunk_ids = [c for c, _ in cand.chunks[:50]] if relevant else []
    if run.where:  # the graph's chunks too: only of the documents kept
        allowed = index.store.chunk_ids_where(run.where)
        chunk_ids = [c for c in chunk_ids if c in allowed]
    return chunk_ids


def local_context(index: SearchIndex, run: SearchRun, cand: LocalCandidates, config: LocalConfig) -> BuiltContext:
    """The candidates' reports, entities, relationships and text (of the documents `run.where`
    keeps), packed into the answer prompt's room, with what the shown reports cite."""
    room = run.answer_room(LOCAL_CITATIONS)
    with run.timer("context"):
        chunk_ids = candidate_chunks(index, run, cand, config)
        reports = [
            (index.globals.id_of[c], index.reports_by_community[c])
            for c in cand.communities
            if c in index.reports_by_community
        ]
        chunks = index.store.chunks_by_id(chunk_ids)
        built = build_local_context(
            graph=index.graph,
            entities=[k for k, _ in cand.entities],
            relationships=list(cand.relationships),
            reports=reports,
            chunks=chunks,
            sid_of=index.sid_of,
            budget=room,
            config=config,
            count=run.counter,
            # A co-occurrence graph's "related to" rows only repeat that names share a sentence.
            omit_relations={index.cooccurrence_relation} if index.cooccurrence_relation is not None else set(),
            places=index.places(chunks),
        )
        return dataclasses.replace(built, sources=nested_sources(built.sources, index.store, index.graph_index))
