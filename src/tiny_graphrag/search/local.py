"""Local search: the retriever's candidates packed into a context, then one answer call.

What the retriever does (local_retriever.py):

1. Link: exact normalized name matches plus embedding similarity (linking.py).
2. Spread: personalized PageRank over entities and chunks (graph_index.py), seeded by the linked entities (mass 1 in
   all, by link score or query-entity cosine over specificity) and the best hybrid (dense + keyword) chunks (mass
   `passage_weight`); a neighbour ranks high when its relations to the seeds are heavy and it is mentioned where the
   seeds are, as in HippoRAG 2; entities whose vectors are nearly the same ("US", "United States") are linked too
   (HippoRAG's synonymy edges, `synonym_similarity`), and links that only say two names share a sentence count
   `cooccurrence_weight` (0 by default: the mentions carry the walk).
3. Rank: entities by PageRank mass (seeds first); relationships among them by weight and the endpoints' combined degree
   (GraphRAG's order); the most specific community of each entity, by the mass of its entities; chunks: the best
   `keep_text_top` hybrid ones first, then by PageRank mass (plus `prior_weight` times the fused text score), then the
   rest of the hybrid ranking.

When nothing links, the candidates are the hybrid text ranking alone, and `linked` is empty. The retriever also embeds
the query. This module gathers the candidates' reports and text, packs them with the entities and relationships into
their token shares (context.py), and one call answers."""

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
