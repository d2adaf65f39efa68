"""Hierarchical Leiden communities over the whole graph, as in the GraphRAG paper (§3.1.4).

Level 0 partitions every node (all connected components, singletons included). Each community
larger than `max_cluster_size` is split by Leiden on its induced subgraph, giving the next level;
a community that is small enough, or that Leiden cannot split, is carried down unchanged as its
own single child. So every level partitions all nodes, and the last level holds the leaves.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence

import networkx as nx

from .config import CommunityConfig
from .records import Community, content_id

log = logging.getLogger(__name__)


def _undirected_weights(graph: nx.MultiDiGraph) -> dict[tuple[str, str], float]:
    """Summed `weight` of all parallel edges between two nodes, either direction (self-loops dropped)."""
    weights: dict[tuple[str, str], float] = defaultdict(float)
    for u, v, data in graph.edges(data=True):
        if u == v:
            continue
        a, b = (u, v) if u <= v else (v, u)
        w = data.get("weight", 1)
        weights[(a, b)] += float(w if w is not None else 1)
    return dict(weights)


def _components(nodes: Sequence[str], adjacency: dict[str, set[str]]) -> list[list[str]]:
    """Connected components, each sorted, in order of their smallest node (deterministic)."""
    seen: set[str] = set()
    out = []
    for start in nodes:  # nodes are sorted, so components come out ordered by their first node
        if start in seen:
            continue
        seen.add(start)
        stack, comp = [start], []
        while stack:
            n = stack.pop()
            comp.append(n)
            for m in adjacency.get(n, ()):
                if m not in seen:
                    seen.add(m)
                    stack.append(m)
        out.append(sorted(comp))
    return out


def _leiden(
    members: Sequence[str],
    weights: dict[tuple[str, str], float],
    adjacency: dict[str, set[str]],
    config: CommunityConfig,
) -> list[list[str]]:
    """Leiden on the subgraph induced by `members` (sorted); returns the parts, each sorted."""
    import igraph as ig
    import leidenalg

    index = {n: i for i, n in enumerate(members)}
    edges, w = [], []
    # Only the members' own edges: walking every edge of the graph per split was quadratic.
    for a in members:
        for b in adjacency.get(a, ()):
            if a < b and b in index:  # weights are keyed (smaller, larger)
                edges.append((index[a], index[b]))
                w.append(weights[(a, b)])
    if not edges:
        return [[n] for n in members]
    order = sorted(range(len(edges)), key=lambda i: edges[i])  # stable input -> stable output
    g = ig.Graph(n=len(members), edges=[edges[i] for i in order])
    g.es["weight"] = [w[i] for i in order]
    # RBConfiguration with resolution 1 is modularity; other values let users tune granularity.
    partition = leidenalg.find_partition(
        g,
        leidenalg.RBConfigurationVertexPartition,
        weights="weight",
        resolution_parameter=config.resolution,
        # leidenalg's default of 2 iterations: iterating until stable (-1) took ~13 s instead of
        # 2.9 s on a random 8k-node / 24k-edge graph here; the seed keeps the result deterministic.
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
    edges = {(u, v, str(k)) for n in nodes for u, v, k in graph.out_edges(n, keys=True) if v in inside}
    return tuple(sorted(edges))


def hierarchical_communities(graph: nx.MultiDiGraph, config: CommunityConfig | None = None) -> list[Community]:
    """Communities of every level, level 0 first; each level is a partition of all nodes."""
    config = config or CommunityConfig()
    if graph.number_of_nodes() == 0:
        return []

    nodes = sorted(graph.nodes)
    weights = _undirected_weights(graph)
    adjacency: dict[str, set[str]] = defaultdict(set)
    for a, b in weights:
        adjacency[a].add(b)
        adjacency[b].add(a)

    # Level 0: Leiden per connected component. Leiden never joins disconnected nodes anyway, and
    # running per component keeps one component's partition independent of unrelated ones
    # (modularity's null model otherwise depends on the whole graph's edge weight).
    level0: list[list[str]] = []
    for comp in _components(nodes, adjacency):
        level0.extend([comp] if len(comp) == 1 else _leiden(comp, weights, adjacency, config))

    # Each level: (members, can_split) per community, plus parent index into the previous level.
    levels: list[list[tuple[tuple[str, ...], bool]]] = [[(p, True) for p in _sorted_parts(level0)]]
    parents: list[list[int | None]] = [[None] * len(levels[0])]
    while True:
        current = levels[-1]
        if not any(len(m) > config.max_cluster_size and ok for m, ok in current):
            break
        nxt: list[tuple[tuple[str, ...], bool]] = []
        nxt_parents: list[int | None] = []
        for i, (members, can_split) in enumerate(current):
            parts: list[tuple[str, ...]] = [members]
            splittable = can_split
            if can_split and len(members) > config.max_cluster_size:
                found = _sorted_parts(_leiden(members, weights, adjacency, config))
                if len(found) > 1:
                    parts = found
                else:
                    # Same subgraph and seed would give the same single part again: stop trying.
                    splittable = False
                    log.debug("community of %d nodes cannot be split further", len(members))
            for p in parts:
                nxt.append((p, splittable))
                nxt_parents.append(i)
        levels.append(nxt)
        parents.append(nxt_parents)

    ids = [[content_id("com", lvl, *members) for members, _ in level] for lvl, level in enumerate(levels)]
    children: list[list[list[str]]] = [[[] for _ in level] for level in levels]
    for lvl in range(1, len(levels)):
        for j, parent in enumerate(parents[lvl]):
            children[lvl - 1][parent].append(ids[lvl][j])

    out: list[Community] = []
    for lvl, level in enumerate(levels):
        for j, (members, _) in enumerate(level):
            parent = parents[lvl][j]
            out.append(
                Community(
                    id=ids[lvl][j],
                    level=lvl,
                    nodes=members,
                    parent=ids[lvl - 1][parent] if parent is not None else None,
                    children=tuple(children[lvl][j]),
                    edges=_inner_edges(graph, members),
                )
            )
    log.info(
        "%d communities over %d levels (%s per level)",
        len(out),
        len(levels),
        ", ".join(str(len(level)) for level in levels),
    )
    return out
