"""Local search's retriever: link the query to entities, spread over the graph, rank what to show.

It reads the graph, the entity linker and the hybrid text ranking, never the search that uses it (local.py builds the
context from its candidates and asks for the answer)."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from tiny_graphrag.records import Community
from tiny_graphrag.search.answer import Timer
from tiny_graphrag.search.config import FusionConfig, LocalConfig
from tiny_graphrag.search.graph_index import GraphIndex, top_candidates
from tiny_graphrag.search.hybrid import HybridRetriever, Ranked
from tiny_graphrag.search.linking import EntityLinker, LinkedEntity

Edge = tuple[str, str, str]


@dataclass(frozen=True)
class LocalCandidates:
    linked: tuple[LinkedEntity, ...]
    entities: tuple[tuple[str, float], ...]  # node key, PageRank mass; best first
    relationships: tuple[Edge, ...]  # best first
    communities: tuple[str, ...]  # community ids, best first
    chunks: tuple[tuple[str, float], ...]  # chunk id, score (graph mass or fused); best first
    hybrid: Ranked
    graph_chunks: tuple[tuple[str, float], ...]  # chunk id, graph score; best first


class LocalRetriever:
    def __init__(
        self,
        graph_index: GraphIndex,
        linker: EntityLinker,
        hybrid: HybridRetriever,
        communities: Sequence[Community] = (),
        *,
        reported: set[str] | None = None,
        embed: Callable[[str], np.ndarray] | None = None,
    ):
        self.index, self.graph, self.linker, self.hybrid = graph_index, graph_index.graph, linker, hybrid
        self.embed = embed  # the query's vector, when retrieve is given none
        # The deepest (most specific) community of each entity whose report exists.
        self._community_of: dict[str, Community] = {}
        for c in sorted(communities, key=lambda c: c.level):
            if reported is not None and c.id not in reported:
                continue
            for node in c.nodes:
                self._community_of[node] = c

    def link(self, query: str, query_vector: np.ndarray, config: LocalConfig) -> list[LinkedEntity]:
        return self.linker.link(query, query_vector, top_k=config.top_entities, min_similarity=config.min_similarity)

    def retrieve(
        self,
        query: str,
        query_vector: np.ndarray | None = None,
        config: LocalConfig | None = None,
        fusion: FusionConfig | None = None,
        *,
        linked: list[LinkedEntity] | None = None,
        hybrid: Ranked | None = None,
        where: Mapping[str, str] | None = None,
        timer: Timer | None = None,
    ) -> LocalCandidates:
        """The query embedded (unless `query_vector` is given), linked and spread over the graph;
        the text ranked only over the documents whose metadata has each `where` key=value. The
        steps' seconds go to `timer` ("embed_query", "link", "retrieve")."""
        config = config or LocalConfig()
        fusion = fusion or self.hybrid.fusion
        timer = timer or Timer()
        if query_vector is None:
            assert self.embed is not None, "a retriever without an embedder needs the query's vector"
            with timer("embed_query"):
                query_vector = self.embed(query)
        if linked is None:
            with timer("link"):
                linked = self.link(query, query_vector, config)
        with timer("retrieve"):
            if hybrid is None:
                hybrid = self.hybrid.rank(query, query_vector, fusion=fusion, where=where)
            if not linked or len(self.index) == 0:
                return LocalCandidates(tuple(linked), (), (), (), hybrid.fused, hybrid, ())
            mass, chunk_mass = self.index.personalized_pagerank(
                self._entity_seeds(linked, query_vector, config),
                _chunk_seeds(hybrid, config),
                damping=config.damping,
                synonym_similarity=config.synonym_similarity,
                cooccurrence_weight=config.cooccurrence_weight,
            )
            entities = self._rank_entities(linked, mass, config.max_entities)
            graph_chunks = chunk_mass.top(fusion.depth)
            fused = dict(hybrid.fused)
            ranked = graph_chunks
            if config.prior_weight > 0 and graph_chunks:
                # The text ranking as a prior mixed with the walk's: each scaled by its best score.
                top_mass, top_fused = graph_chunks[0][1], max(fused.values(), default=0.0) or 1.0
                mixed = {c: m / top_mass for c, m in graph_chunks}
                for c, f in hybrid.fused[: fusion.depth]:
                    mixed[c] = mixed.get(c, 0.0) + config.prior_weight * f / top_fused
                ranked = sorted(mixed.items(), key=lambda kv: (-kv[1], kv[0]))
            order = hybrid.ids("fused")[: config.keep_text_top] + [c for c, _ in ranked] + hybrid.ids("fused")
            chunks = [(c, chunk_mass.get(c, fused.get(c, 0.0))) for c in dict.fromkeys(order)]
            relationships = tuple(self._rank_relationships([k for k, _ in entities]))
            communities = tuple(self._rank_communities(entities))
            return LocalCandidates(
                tuple(linked), tuple(entities), relationships, communities, tuple(chunks), hybrid, tuple(graph_chunks)
            )

    def _entity_seeds(self, linked: list[LinkedEntity], query_vector: np.ndarray, config: LocalConfig) -> dict:
        """Entity seeds summing to 1, weighted by link confidence ("link": 1 for an exact name match, else the cosine)
        or by query-entity cosine ("similarity"), times specificity (HippoRAG: an entity mentioned in few chunks says
        more about where the answer is than one mentioned everywhere)."""
        if config.seed_by == "similarity":
            conf = self.linker.similarity(query_vector, [e.key for e in linked])
        else:
            conf = [e.score for e in linked]
        w = {e.key: max(c, 1e-6) / np.sqrt(self.index.chunk_count[self.index.pos[e.key]]) for e, c in zip(linked, conf)}
        total = sum(w.values())
        return {k: v / total for k, v in w.items()}

    # -- ranking ----------------------------------------------------------------------------
    def _rank_entities(self, linked: list[LinkedEntity], mass: np.ndarray, limit: int) -> list[tuple[str, float]]:
        seeds = [e.key for e in linked]
        seed_set = set(seeds)
        out = [(k, float(mass[self.index.pos[k]])) for k in seeds]
        want = max(limit, len(seeds))
        for i in _best_first(mass, want + len(seeds)):  # seeds may be among the best: skip them
            if len(out) >= want or mass[i] <= 0:
                break
            key = self.index.keys[i]
            if key not in seed_set:
                out.append((key, float(mass[i])))
        return out

    def _rank_relationships(self, keys: list[str]) -> list[Edge]:
        """Every relationship touching `keys` once: in-network ones first (both ends shown), as
        GraphRAG's local context does; then by weight, the endpoints' combined degree (an
        endpoint outside the selection counts its degree too) and hid."""
        selected, degree = set(keys), functools.cache(self.graph.degree)
        rank: dict[Edge, tuple] = {}
        for u in keys:
            for a, b, k, d in chain(
                self.graph.out_edges(u, keys=True, data=True), self.graph.in_edges(u, keys=True, data=True)
            ):
                if (a, b, k) not in rank:
                    outside = a not in selected or b not in selected
                    rank[a, b, k] = (outside, -float(d.get("weight", 1.0)), -(degree(a) + degree(b)), d.get("hid", 0))
        return sorted(rank, key=lambda e: (rank[e], e))

    def _rank_communities(self, entities: list[tuple[str, float]]) -> list[str]:
        score: dict[str, float] = defaultdict(float)
        for key, m in entities:
            if (c := self._community_of.get(key)) is not None:
                score[c.id] += m
        return sorted(score, key=lambda cid: (-score[cid], cid))


def _chunk_seeds(hybrid: Ranked, config: LocalConfig) -> dict[str, float]:
    """The best `seed_chunks` text-ranked chunks as seeds (weight 1/rank), summing to
    `passage_weight` against the entity seeds' 1 (HippoRAG 2's passage nodes in the reset)."""
    top = hybrid.fused[: config.seed_chunks]
    w = {cid: 1.0 / rank for rank, (cid, _) in enumerate(top, start=1)}
    total = sum(w.values())
    return {c: config.passage_weight * v / total for c, v in w.items()} if total else {}


def _best_first(mass: np.ndarray, k: int) -> np.ndarray:
    """Indices of at least the k largest positive masses, largest first, ties by index (as a
    stable argsort would order them), without sorting every entity of a large graph."""
    candidates = top_candidates(mass, k)
    return candidates[np.lexsort((candidates, -mass[candidates]))]
