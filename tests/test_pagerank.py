"""Personalized PageRank (search/graph_index.py) against networkx.pagerank on the same graphs.

The walk's graph, stated directly: relations link both ways with their weights summed over
labels, directions and parallel edges (self-loops ignored), and each chunk links to every entity
it mentions with weight 1; dangling nodes (no links) jump back to the seeds.
"""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
from test_search_fixtures import DOCS, _chunks, _graph

from tiny_graphrag.index.graph import assign_hids
from tiny_graphrag.records import Document, content_id
from tiny_graphrag.search.graph_index import GraphIndex


def reference_pagerank(g: nx.MultiDiGraph, seeds: dict, chunk_seeds: dict, damping: float):
    walk = nx.MultiGraph()
    walk.add_nodes_from(g.nodes)
    for u, v, d in g.edges(data=True):
        if u != v:
            walk.add_edge(u, v, weight=float(d.get("weight", 1.0)))
    for key, d in g.nodes(data=True):
        for cid in dict.fromkeys(p[1] for p in d.get("provenance", ())):
            walk.add_edge(("chunk", cid), key, weight=1.0)
    p = {n: 0.0 for n in walk}
    p.update(seeds)
    p.update({("chunk", c): w for c, w in chunk_seeds.items()})
    return nx.pagerank(walk, alpha=damping, personalization=p, dangling=p, weight="weight", tol=1e-13, max_iter=10_000)


def fixture_graph() -> nx.MultiDiGraph:
    docs = [Document(content_id("doc", n), t, n) for n, t in DOCS.items()]
    return _graph(docs, [c for d in docs for c in _chunks(d)])


def random_graph(seed: int) -> nx.MultiDiGraph:
    """Parallel edges, both directions, self-loops, isolated (dangling) nodes, chunks shared by entities."""
    rng = random.Random(seed)
    g = nx.MultiDiGraph()
    nodes = [f"n{i:02d}" for i in range(20)]
    for n in nodes:
        chunks = rng.sample(range(8), rng.choice([0, 1, 1, 2]))
        g.add_node(n, provenance=[("doc", f"c{c}", 0, 1) for c in chunks])
    for _ in range(30):
        u, v = rng.choice(nodes[:15]), rng.choice(nodes[:15])  # n15..n19 stay without relations
        g.add_edge(u, v, key=rng.choice(["a", "b"]), weight=rng.choice([1, 2, 0.5]))
    assign_hids(g)
    return g


def star_with_dangling_seed() -> nx.MultiDiGraph:
    g = nx.MultiDiGraph()
    for i in range(5):
        g.add_edge("hub", f"leaf{i}", key="r", weight=1)
        g.add_edge(f"leaf{i}", "hub", key="r", weight=2)  # the reverse direction adds to the same link
    g.add_node("alone")
    assign_hids(g)
    return g


CASES = {
    "fixture": (fixture_graph, {"alan turing": 1.0, "joan clarke": 0.5}, "first-chunk"),
    "random0": (lambda: random_graph(0), {"n01": 1.0, "n17": 0.3}, "c2"),
    "random1": (lambda: random_graph(1), {"n03": 0.2, "n04": 0.8}, None),
    "random2": (lambda: random_graph(2), {"n16": 1.0}, "c5"),  # a dangling entity seed
    "star": (star_with_dangling_seed, {"leaf0": 1.0, "alone": 1.0}, None),
}


@pytest.mark.parametrize("damping", [0.5, 0.85])
@pytest.mark.parametrize("case", sorted(CASES))
def test_personalized_pagerank_matches_networkx(case, damping):
    make, seeds, chunk_seed = CASES[case]
    g = make()
    index = GraphIndex(g)
    if chunk_seed == "first-chunk":
        chunk_seed = index.chunk_ids[0]
    chunk_seeds = {chunk_seed: 0.7} if chunk_seed in index.chunk_ids else {}
    mass, chunk_mass = index.personalized_pagerank(seeds, chunk_seeds, damping=damping, iterations=1000, tol=1e-13)
    ref = reference_pagerank(g, seeds, chunk_seeds, damping)
    np.testing.assert_allclose(mass, [ref[k] for k in index.keys], atol=1e-9)
    got_chunks = np.array([chunk_mass.get(c, 0.0) for c in index.chunk_ids])
    np.testing.assert_allclose(got_chunks, [ref[("chunk", c)] for c in index.chunk_ids], atol=1e-9)
    assert mass.sum() + got_chunks.sum() == pytest.approx(1.0)


def test_default_iterations_are_close_to_convergence():
    g = random_graph(3)
    index = GraphIndex(g)
    mass, _ = index.personalized_pagerank({"n02": 1.0}, damping=0.5)
    ref = reference_pagerank(g, {"n02": 1.0}, {}, 0.5)
    np.testing.assert_allclose(mass, [ref[k] for k in index.keys], atol=1e-6)


def random_vectors(keys: list[str], seed: int, dim: int = 6):
    """Unit vectors, with pairs of near-copies so some cosines are high (the synonyms)."""
    from tiny_graphrag.search.vectors import VectorIndex

    rng = np.random.default_rng(seed)
    base = rng.normal(size=(len(keys), dim))
    for i in range(0, len(keys) - 1, 3):  # every third entity nearly copies the next one
        base[i + 1] = base[i] + 0.05 * rng.normal(size=dim)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    have = keys[:-2]  # the last two entities have no vector: they never get a synonym link
    return VectorIndex(have, base[: len(have)].astype(np.float32)), base


@pytest.mark.parametrize("threshold", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_synonym_links_are_every_pair_above_the_threshold_once_both_ways(seed, threshold):
    g = random_graph(seed)
    keys = list(g.nodes)
    vectors, base = random_vectors(keys, seed)
    index = GraphIndex(g, entity_vectors=vectors)
    links = index.synonym_links(threshold, block=4).toarray()  # small blocks: pairs across blocks too
    have = set(vectors.ids)
    for i, a in enumerate(index.keys):
        for j, b in enumerate(index.keys):
            cos = float(base[keys.index(a)] @ base[keys.index(b)])
            want = cos if (i != j and a in have and b in have and cos >= threshold) else 0.0
            assert links[i, j] == pytest.approx(want, abs=1e-6)


@pytest.mark.parametrize("damping", [0.5, 0.85])
@pytest.mark.parametrize("seed", [0, 1])
def test_pagerank_with_synonym_links_matches_networkx_on_the_linked_graph(seed, damping):
    g = random_graph(seed)
    vectors, _ = random_vectors(list(g.nodes), seed)
    index = GraphIndex(g, entity_vectors=vectors)
    seeds, chunk_seeds = {"n01": 1.0, "n16": 0.5}, {"c2": 0.3}
    mass, chunk_mass = index.personalized_pagerank(
        seeds, chunk_seeds, damping=damping, synonym_similarity=0.9, iterations=1000, tol=1e-13
    )
    linked = g.copy()
    links = index.synonym_links(0.9).tocoo()
    for i, j, w in zip(links.row, links.col, links.data):
        if i < j:  # the reference adds each synonym pair as one more undirected relation
            linked.add_edge(index.keys[i], index.keys[j], key="synonym", weight=float(w))
    assert links.nnz > 0
    ref = reference_pagerank(linked, seeds, chunk_seeds, damping)
    np.testing.assert_allclose(mass, [ref[k] for k in index.keys], atol=1e-9)
    np.testing.assert_allclose(
        [chunk_mass.get(c, 0.0) for c in index.chunk_ids], [ref[("chunk", c)] for c in index.chunk_ids], atol=1e-9
    )
    plain, _ = index.personalized_pagerank(seeds, chunk_seeds, damping=damping, iterations=1000, tol=1e-13)
    assert not np.allclose(plain, mass)  # the links changed the walk


def test_a_synonym_link_carries_the_walk_to_a_passage_naming_the_other_form():
    """ "US" and "United States" are two nodes; only the synonym link lets the walk from a
    question about the US reach the chunk that names the United States."""
    from tiny_graphrag.backends.embed import Embedder
    from tiny_graphrag.search.vectors import VectorIndex

    g = nx.MultiDiGraph()
    g.add_node("us", name="US", type="GPE", provenance=[("d1", "c1", 0, 2)])
    g.add_node("united states", name="United States", type="GPE", provenance=[("d2", "c2", 0, 13)])
    g.add_node("france", name="France", type="GPE", provenance=[("d3", "c3", 0, 6)])
    embedder = Embedder("all-MiniLM-L6-v2", device="cpu")
    keys = list(g.nodes)
    index = GraphIndex(
        g, entity_vectors=VectorIndex(keys, embedder.embed(["US (GPE)", "United States (GPE)", "France (GPE)"]))
    )
    _, without = index.personalized_pagerank({"us": 1.0}, damping=0.5)
    _, with_links = index.personalized_pagerank({"us": 1.0}, damping=0.5, synonym_similarity=0.8)
    assert without.get("c2", 0.0) == 0.0 and with_links.get("c2", 0.0) > 0.0
    assert with_links.get("c3", 0.0) == 0.0  # France is not a synonym of the US


def test_a_graph_too_large_for_all_pairs_gets_no_synonym_links_and_a_warning(monkeypatch, caplog):
    from tiny_graphrag.search import graph_index

    g = random_graph(0)
    vectors, _ = random_vectors(list(g.nodes), 0)
    index = GraphIndex(g, entity_vectors=vectors)
    assert index.synonym_links(0.9).nnz > 0
    monkeypatch.setattr(graph_index, "MAX_SYNONYM_ENTITIES", len(g) - 1)
    small = GraphIndex(g, entity_vectors=vectors)
    with caplog.at_level("WARNING", logger="tiny_graphrag.search.graph_index"):
        assert small.synonym_links(0.9).nnz == 0
    assert "synonym_similarity=None" in caplog.text
    plain, _ = small.personalized_pagerank({"n01": 1.0}, damping=0.5)
    linked, _ = small.personalized_pagerank({"n01": 1.0}, damping=0.5, synonym_similarity=0.9)
    np.testing.assert_allclose(plain, linked)


@pytest.mark.parametrize("weight", [0.0, 0.3, 2.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_cooccurrence_links_weigh_what_the_walk_is_told(seed, weight):
    """Relations labelled as co-occurrence count `cooccurrence_weight` times their weight (0:
    not at all); typed relations between the same entities are untouched."""
    g = random_graph(seed)
    index = GraphIndex(g, cooccurrence_relation="b")
    seeds, chunk_seeds = {"n01": 1.0, "n16": 0.5}, {"c2": 0.3}
    mass, chunk_mass = index.personalized_pagerank(
        seeds, chunk_seeds, damping=0.85, cooccurrence_weight=weight, iterations=1000, tol=1e-13
    )
    scaled = nx.MultiDiGraph()
    scaled.add_nodes_from(g.nodes(data=True))
    for u, v, k, d in g.edges(keys=True, data=True):
        w = d["weight"] * (weight if k == "b" else 1.0)
        if w > 0:
            scaled.add_edge(u, v, key=k, weight=w)
    ref = reference_pagerank(scaled, seeds, chunk_seeds, 0.85)
    np.testing.assert_allclose(mass, [ref[k] for k in index.keys], atol=1e-9)
    np.testing.assert_allclose(
        [chunk_mass.get(c, 0.0) for c in index.chunk_ids], [ref[("chunk", c)] for c in index.chunk_ids], atol=1e-9
    )
    as_built, _ = GraphIndex(g).personalized_pagerank(seeds, chunk_seeds, damping=0.85, iterations=1000, tol=1e-13)
    assert not np.allclose(as_built, mass)  # the weight changed the walk
    same, _ = index.personalized_pagerank(seeds, chunk_seeds, damping=0.85, iterations=1000, tol=1e-13)
    np.testing.assert_allclose(same, as_built, atol=1e-12)  # weight 1: the walk as built


def test_the_engine_takes_the_cooccurrence_relation_from_the_index_manifest(tmp_path):
    """A spaCy-built index records its co-occurrence label; the engine's walk keeps those links
    apart (so LocalConfig.cooccurrence_weight applies to them), and a local search with weight 0
    still reaches the chunks through the mentions."""
    from tiny_graphrag import build_index
    from tiny_graphrag.config import BuildConfig, ChunkingConfig, ExtractionConfig
    from tiny_graphrag.search.config import LocalConfig, SearchConfig
    from tiny_graphrag.search.engine import QueryEngine

    (tmp_path / "a.txt").write_text(
        "Barack Obama was born in Honolulu, Hawaii. Obama studied at Harvard Law School. "
        "Michelle Obama grew up in Chicago.\n",
        encoding="utf-8",
    )
    config = BuildConfig(
        chunking=ChunkingConfig(max_tokens=24, overlap_tokens=0),
        extraction=ExtractionConfig(extractor="spacy"),
        reports=False,
    )
    build_index([tmp_path / "a.txt"], tmp_path / "idx", config=config, progress=False)
    search = SearchConfig(local=LocalConfig(cooccurrence_weight=0.0))
    with QueryEngine(tmp_path / "idx", config=search) as engine:
        assert engine.index.cooccurrence_relation == "related to"
        assert engine.index.graph_index.cooccurrence.nnz > 0 and engine.index.graph_index.adjacency.nnz == 0
        query = "Where did Barack Obama study?"
        result = engine.local_search(query, only_context=True)
        assert result.details["linked_entities"] and "Harvard Law School" in result.context
        # The setting reaches the walk: weight 0 and weight 1 spread different masses over the chunks.
        qvec = engine.index.embed_query(query)
        without = engine.index.local.retrieve(query, qvec, LocalConfig(cooccurrence_weight=0.0)).graph_chunks
        with_links = engine.index.local.retrieve(query, qvec, LocalConfig(cooccurrence_weight=1.0)).graph_chunks
        assert without and with_links and not np.allclose([m for _, m in without], [m for _, m in with_links])


def test_cooccurrence_weight_must_not_be_negative():
    from tiny_graphrag.search.config import LocalConfig

    with pytest.raises(ValueError, match="cooccurrence_weight"):
        LocalConfig(cooccurrence_weight=-1)
