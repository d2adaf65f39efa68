"""Entity linking: exact normalized matches and embedding similarity; odd queries match nothing."""

from __future__ import annotations

import numpy as np
import pytest
from test_search_fixtures import DOCS, ENTITIES, _chunks, _graph

from tiny_graphrag.records import Document, content_id
from tiny_graphrag.search.graph_index import GraphIndex
from tiny_graphrag.search.linking import EntityLinker
from tiny_graphrag.search.vectors import VectorIndex


@pytest.fixture(scope="module")
def graph():
    docs = [Document(content_id("doc", n), t, n) for n, t in DOCS.items()]
    return _graph(docs, [c for d in docs for c in _chunks(d)])


@pytest.fixture(scope="module")
def linker(graph, embedder):
    from tiny_graphrag.indexing.pipeline import entity_text

    keys = list(graph.nodes)
    return EntityLinker(graph, VectorIndex(keys, embedder.embed([entity_text(graph.nodes[k]) for k in keys])))


def test_exact_matches_keys_and_aliases(linker):
    keys = {e.key for e in linker.exact("What did Babbage design with Ada Lovelace?")}
    assert keys == {"charles babbage", "ada lovelace"}
    assert {e.key for e in linker.exact("KING’S COLLEGE?")} == {"king's college"}  # normalized


def test_no_substring_matching(linker):
    # "Park", "Tower", "Engine" are parts of names, not names: they must not link.
    assert linker.exact("park tower engine college") == []
    assert {e.key for e in linker.exact("Paris")} == {"paris"}


@pytest.mark.parametrize("query", ["", "   ", "\n", "?", "...", "the", "the of and", "a", "'s", "--", "🙂"])
def test_odd_queries_link_nothing(linker, embedder, query):
    vec = embedder.embed([query])[0] if query.strip() else np.zeros(384, dtype=np.float32)
    linked = linker.link(query, vec, top_k=10, min_similarity=0.45)
    assert linked == []


def test_odd_queries_never_match_everything(linker, embedder):
    for query in ["x", "1", "what?", "and or not"]:
        linked = linker.link(query, embedder.embed([query])[0], top_k=10, min_similarity=0.45)
        assert len(linked) < len(ENTITIES) // 2


def test_embedding_links_a_paraphrase(linker, embedder):
    linked = linker.link("the computer scientist Turing", embedder.embed(["the computer scientist Turing"])[0])
    assert "alan turing" in {e.key for e in linked}
    assert all(e.score >= 0.45 for e in linked if e.how == "embedding")


def test_personalized_pagerank_reaches_two_hops(graph):
    index = GraphIndex(graph)
    mass, chunks = index.personalized_pagerank({"joan clarke": 1.0}, damping=0.5)
    assert mass.sum() + sum(chunks.values()) == pytest.approx(1.0)
    pos = index.pos
    # Cambridge is two hops from Joan Clarke (via Turing and King's College); Paris is unreachable.
    assert mass[pos["cambridge"]] > 0
    assert mass[pos["paris"]] == 0
    assert mass[pos["alan turing"]] > mass[pos["cambridge"]]
    assert chunks and all(v > 0 for v in chunks.values())
    paris_chunks = {c for c in index.node_chunks[pos["paris"]]}
    assert not paris_chunks & set(chunks)
    empty_mass, empty_chunks = index.personalized_pagerank({})
    assert empty_mass.sum() == 0 and empty_chunks == {}


def test_chunk_seeds_spread_to_the_entities_they_mention(graph):
    index = GraphIndex(graph)
    chunk = index.node_chunks[index.pos["grace hopper"]][0]
    mass, chunks = index.personalized_pagerank({}, {chunk: 1.0})
    assert mass[index.pos["grace hopper"]] > 0
    assert chunks[chunk] == max(chunks.values())
    assert mass[index.pos["alan turing"]] == 0


@pytest.mark.parametrize("k", [0, 1, 3, 5, 8, 20])
def test_chunk_mass_top_matches_a_full_sort(k):
    from tiny_graphrag.search.graph_index import ChunkMass

    ids = [f"c{i:02d}" for i in range(12)]
    # ties on purpose (0.2 three times, 0.1 twice), zeros that must never be returned
    mass = np.array([0.1, 0.2, 0.0, 0.05, 0.2, 0.3, 0.0, 0.2, 0.1, 0.01, 0.0, 0.04])
    cm = ChunkMass(ids, {c: i for i, c in enumerate(ids)}, mass)
    reference = {c: float(m) for c, m in zip(ids, mass) if m > 0}
    assert dict(cm) == reference and len(cm) == len(reference)
    assert cm.top(k) == sorted(reference.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    assert cm.get("c02") is None and cm.get("missing", 1.5) == 1.5 and cm["c05"] == 0.3


@pytest.mark.parametrize("k", [1, 2, 4, 7, 50])
def test_best_first_matches_a_stable_argsort(k):
    from tiny_graphrag.search.local_retriever import _best_first

    rng = np.random.default_rng(k)
    mass = rng.choice([0.0, 0.0, 0.1, 0.2, 0.25, 0.5], size=30)  # many ties and zeros
    full = [i for i in np.argsort(-mass, kind="stable") if mass[i] > 0]
    got = list(_best_first(mass, k))
    assert got[:k] == full[:k]
    assert got == full[: len(got)]  # a prefix of the full order, never a different order
