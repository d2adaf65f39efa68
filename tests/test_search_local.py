"""Local search's relationship ranking against a direct statement of GraphRAG's order."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from tiny_graphrag.index.graph import assign_hids
from tiny_graphrag.search.graph_index import GraphIndex
from tiny_graphrag.search.local_retriever import LocalRetriever


def _retriever(g: nx.MultiDiGraph) -> LocalRetriever:
    return LocalRetriever(GraphIndex(g), linker=None, hybrid=None)  # ranking reads only the graph


def reference_order(g: nx.MultiDiGraph, keys: list[str]) -> list[tuple]:
    """Every edge touching the selection once; both ends selected first; then by weight, the
    endpoints' combined degree (whether or not an endpoint is selected), and hid."""
    selected = set(keys)
    edges = {(u, v, k): d for u, v, k, d in g.edges(keys=True, data=True) if u in selected or v in selected}

    def rank(e):
        d = edges[e]
        return (
            not (e[0] in selected and e[1] in selected),
            -d.get("weight", 1.0),
            -(g.degree(e[0]) + g.degree(e[1])),
            d["hid"],
        )

    return sorted(edges, key=rank)


def test_in_and_out_edges_of_hubs_rank_alike():
    # S is selected; H1 -> S and S -> H2 both touch a hub of degree 5 with the same weight:
    # the combined degrees are equal, so the hid decides (content-derived since issue 14; was: H1 -> S first).
    g = nx.MultiDiGraph()
    g.add_edge("h1", "s", key="r", weight=1)
    g.add_edge("s", "h2", key="r", weight=1)
    for i in range(4):
        g.add_edge("h1", f"a{i}", key="r", weight=1)
        g.add_edge(f"b{i}", "h2", key="r", weight=1)
    assign_hids(g)
    assert g.degree("h1") == g.degree("h2") == 5
    tied = sorted([("h1", "s", "r"), ("s", "h2", "r")], key=lambda e: g.edges[e]["hid"])
    assert _retriever(g)._rank_relationships(["s"]) == tied


@pytest.mark.parametrize("seed", range(6))
def test_relationship_ranking_matches_the_reference(seed):
    rng = random.Random(seed)
    g = nx.MultiDiGraph()
    nodes = [f"n{i:02d}" for i in range(15)]
    g.add_nodes_from(nodes)
    for _ in range(40):  # parallel edges, both directions, a few self-loops
        u, v = rng.choice(nodes), rng.choice(nodes)
        g.add_edge(u, v, key=rng.choice(["a", "b", "c"]), weight=rng.choice([1, 1, 2, 3]))
    assign_hids(g)
    keys = rng.sample(nodes, 4)
    assert _retriever(g)._rank_relationships(keys) == reference_order(g, keys)
