"""Node merges: fold one node into another, recorded in ``graph.graph["merges"]``.

A record is plain values (saved with the graph): alias, canonical, type, reason and score. Indexes written before undo
was dropped hold more keys per record (copies of the nodes and edges as they were), which are read past."""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections import Counter

import networkx as nx

from tiny_graphrag.records import Merge

log = logging.getLogger(__name__)


def merge_nodes(
    graph: nx.MultiDiGraph, alias: str, canonical: str, *, reason: str = "manual", score: float = 1.0
) -> Merge:
    """Fold node `alias` into `canonical` (same type) and record the merge.

    Does not renumber hids: call graph.assign_hids when done merging."""
    if alias == canonical:
        raise ValueError(f"cannot merge {alias!r} into itself")
    for key in (alias, canonical):
        if key not in graph:
            raise KeyError(f"no node {key!r} in the graph")
    a, c = graph.nodes[alias], graph.nodes[canonical]
    if a.get("type") != c.get("type"):
        raise ValueError(
            f"refusing to merge {alias!r} ({a.get('type')}) into {canonical!r} ({c.get('type')}): "
            "entity resolution never merges across types"
        )
    conflicts = graph.graph.setdefault("type_conflicts", {})
    for u, v, k, d in [*graph.out_edges(alias, keys=True, data=True), *graph.in_edges(alias, keys=True, data=True)]:
        head = canonical if u == alias else u
        tail = canonical if v == alias else v
        if head == tail:  # a relation between the two names of one entity: now a self-loop, dropped
            continue
        if graph.has_edge(head, tail, key=k):
            e = graph.edges[head, tail, k]
            e["weight"] = e.get("weight", 0) + d.get("weight", 0)
            e["score"] = max(e.get("score", 0.0), d.get("score", 0.0))
            e["provenance"] = list(e.get("provenance", [])) + list(d.get("provenance", []))
        else:
            graph.add_edge(head, tail, key=k, **copy.deepcopy(d))
    graph.remove_node(alias)

    c["mentions"] = c.get("mentions", 0) + a.get("mentions", 0)
    c["provenance"] = list(c.get("provenance", [])) + list(a.get("provenance", []))
    known = list(c.get("aliases", []))
    c["aliases"] = known + [s for s in a.get("aliases", []) if s not in known]
    c["type_votes"] = votes = dict(Counter(c.get("type_votes", {})) + Counter(a.get("type_votes", {})))
    c["type_conflict"] = len(votes) > 1
    conflicts.pop(alias, None)
    if c["type_conflict"]:
        conflicts[canonical] = {"chosen": c["type"], "votes": dict(votes)}
    else:
        conflicts.pop(canonical, None)

    merge = Merge(alias, canonical, c.get("type", ""), reason, float(score))
    graph.graph.setdefault("merges", []).append(dataclasses.asdict(merge))
    log.debug("merged %r into %r (%s, %.3f)", alias, canonical, reason, score)
    return merge


def merges(graph: nx.MultiDiGraph) -> list[Merge]:
    """The merges recorded in the graph, oldest first."""
    fields = ("alias", "canonical", "type", "reason", "score")  # Merge's fields, whatever else a record holds
    return [Merge(*(r[k] for k in fields)) for r in graph.graph.get("merges", [])]
