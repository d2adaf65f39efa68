"""Hierarchical Leiden communities over the whole graph, as in the GraphRAG paper (§3.1.4).

Level 0 partitions every node (all connected components, singletons included). Each community larger than
`max_cluster_size` is split by Leiden on its induced subgraph, giving the next level; a community that is small enough,
or that Leiden cannot split, is carried down unchanged as its own single child. So every level partitions all nodes, and
the last level holds the leaves."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import combinations

import networkx as nx

from tiny_graphrag.config import CommunityConfig
from tiny_graphrag.index.graph import node_chunks
from tiny_graphrag.records import Community, content_id

log = logging.getLogger(__name__)

# One level of the hierarchy: (members, can_split, index of its parent in the previous level).
_Level = list[tuple[tuple[str, ...], bool, int | None]]


def _undirected(graph: nx.MultiDiGraph, chunk_weight: float = 0.0) -> nx.Graph:
    """All nodes; one edge per linked pair, weighing the summed `weight` of all parallel edges between the two nodes in
    either direction (self-loops dropped), plus `chunk_weight` for each chunk both are named in (their provenance)."""
    simple: nx.Graph[str] = nx.Graph()
    simple.add_nodes_from(graph)

    def link(u: str, v: str, weight: float) -> None:
        simple.add_edge(u, v, weight=simple.get_edge_data(u, v, {"weight": 0.0})["weight"] + weight)

    for u, v, data in graph.edges(data=True):
        if u != v:
            link(u, v, float(data.get("weight", 1)))
    named: dict[str, list[str]] = defaultdict(list)  # chunk -> the entities it names
    for node in graph if chunk_weight > 0 else ():
        for chunk in node_chunks(graph, node):
            named[chunk].append(node)
    for chunk in sorted(named):
        for u, v in combinations(sorted(named[chunk]), 2):
            link(u, v, chunk_weight)
    return simple


def _leiden(members: Sequence[str], simple: nx.Graph, config: CommunityConfig) -> list[list[str]]:
    """Leiden on the subgraph induced by `members` (sorted); returns the parts, each sorted."""
    import igraph as ig
    import leidenalg

    index = {n: i for i, n in enumerate(members)}
    # Only the members' own edges (walking every edge of the graph per split was quadratic), each
    # pair once (a < b), sorted: stable input -> stable output.
    edges = sorted(
        (index[a], index[b], data["weight"])
        for a in members
        for b, data in simple.adj[a].items()
        if a < b and b in index
    )
    if not edges:
        return [[n] for n in members]
    g = ig.Graph(n=len(members), edges=[(i, j) for i, j, _ in edges])
    # In thousandths: with weights like 1.1 and 2.1, rounding made a move and its undoing both gains and leidenalg looped
    # forever (a 3,000-passage build). Integer sums are exact; one scale for every weight keeps the best partition.
    g.es["weight"] = [max(1, round(w * 1000)) for _, _, w in edges]
    # RBConfiguration with resolution 1 is modularity; other values let users tune granularity.
    partition = leidenalg.find_partition(
        g,
        leidenalg.RBConfigurationVertexPartition,
        weights="weight",
        resolution_parameter=config.resolution,
        # leidenalg's default of 2 iterations: iterating until stable (-1) is several times slower;
        # the seed keeps the result deterministic.
        n_iterations=2,
        seed=config.seed,
    )
    parts: dict[int, list[str]] = defaultdict(list)
    for vertex, part in enumerate(partition.membership):
        parts[part].append(members[vertex])
    return [sorted(p) for p in parts.values()]


def _sorted_parts(parts: Iterable[Sequence[str]]) -> list[tuple[str, ...]]:
    return sorted((tuple(p) for p in parts), key=lambda p: (-len(p), p[0]))


def _inner_edges(graph: nx.MultiDiGraph, nodes: Sequence[str]) -> tuple[tuple[str, str, str], ...]:
    inside = set(nodes)
    return tuple(sorted({(u, v, str(k)) for n in nodes for u, v, k in graph.out_edges(n, keys=True) if v in inside}))


def hierarchical_communities(graph: nx.MultiDiGraph, config: CommunityConfig = CommunityConfig()) -> list[Community]:
    """Communities of every level, level 0 first; each level is a partition of all nodes."""
    if graph.number_of_nodes() == 0:
        return []

    # A relation extractor finding few links (a small GLiREL) leaves most entities alone, a community and report each.
    # Entities named in one chunk are linked weakly, for clustering only (as LazyGraphRAG's co-occurrence graph).
    simple = _undirected(graph, config.chunk_weight)
    # Level 0: Leiden per connected component. Leiden never joins disconnected nodes anyway, and
    # running per component keeps one component's partition independent of unrelated ones
    # (modularity's null model otherwise depends on the whole graph's edge weight).
    level0: list[list[str]] = []
    for comp in sorted(sorted(c) for c in nx.connected_components(simple)):
        level0.extend([comp] if len(comp) == 1 else _leiden(comp, simple, config))

    levels: list[_Level] = [[(p, True, None) for p in _sorted_parts(level0)]]
    while any(len(m) > config.max_cluster_size and ok for m, ok, _ in levels[-1]):
        nxt: _Level = []
        for i, (members, can_split, _) in enumerate(levels[-1]):
            parts, splittable = [members], can_split
            if can_split and len(members) > config.max_cluster_size:
                found = _sorted_parts(_leiden(members, simple, config))
                if len(found) > 1:
                    parts = found
                else:
                    # Same subgraph and seed would give the same single part again: stop trying.
                    splittable = False
                    log.debug("community of %d nodes cannot be split further", len(members))
            nxt.extend((p, splittable, i) for p in parts)
        levels.append(nxt)

    ids = [[content_id("com", lvl, *members) for members, _, _ in level] for lvl, level in enumerate(levels)]
    children: dict[tuple[int, int | None], list[str]] = defaultdict(list)  # (level, index) -> child ids
    for lvl, level in enumerate(levels[1:], 1):
        for j, (_, _, parent) in enumerate(level):
            children[lvl - 1, parent].append(ids[lvl][j])
    out = [
        Community(
            id=ids[lvl][j],
            level=lvl,
            nodes=members,
            parent=ids[lvl - 1][parent] if parent is not None else None,
            children=tuple(children.get((lvl, j), ())),
            edges=_inner_edges(graph, members),
        )
        for lvl, level in enumerate(levels)
        for j, (members, _, parent) in enumerate(level)
    ]
    per_level = ", ".join(str(len(level)) for level in levels)
    log.info("%d communities over %d levels (%s per level)", len(out), len(levels), per_level)
    return out
