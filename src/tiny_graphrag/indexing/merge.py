"""Reversible node merges: fold one node into another and record exactly how to undo it.

Each merge appends an undo record to ``graph.graph["merges"]`` (plain values, so it is saved
with the graph): copies of both nodes and of the alias's edges as they were, and the state
before the merge of every edge the merge changed or created.
"""

from __future__ import annotations

import copy
import logging
from collections import Counter
from typing import Any

import networkx as nx

from tiny_graphrag.index.graph import assign_hids
from tiny_graphrag.records import Merge

log = logging.getLogger(__name__)


def merge_nodes(
    graph: nx.MultiDiGraph, alias: str, canonical: str, *, reason: str = "manual", score: float = 1.0
) -> Merge:
    """Fold node `alias` into `canonical` (same type) and record how to undo it.

    Does not renumber hids: call graph.assign_hids when done merging.
    """
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
    alias_edges = [
        (u, v, k, copy.deepcopy(d))
        for edges in (graph.out_edges, graph.in_edges)
        for u, v, k, d in edges(alias, keys=True, data=True)
    ]
    record: dict[str, Any] = {
        "alias": alias,
        "canonical": canonical,
        "type": c.get("type", ""),
        "reason": reason,
        "score": float(score),
        "alias_node": copy.deepcopy(dict(a)),
        "alias_edges": alias_edges,
        "canonical_node": copy.deepcopy(dict(c)),
        # (head, tail, key, data before the merge or None when the merge created the edge)
        "touched_edges": [],
        "type_conflicts": {k: copy.deepcopy(conflicts.get(k)) for k in (alias, canonical)},
    }

    for u, v, k, d in alias_edges:
        head = canonical if u == alias else u
        tail = canonical if v == alias else v
        if head == tail:  # a relation between the two names of one entity: now a self-loop, dropped
            continue
        if graph.has_edge(head, tail, key=k):
            e = graph.edges[head, tail, k]
            record["touched_edges"].append((head, tail, k, copy.deepcopy(dict(e))))
            e["weight"] = e.get("weight", 0) + d.get("weight", 0)
            e["score"] = max(e.get("score", 0.0), d.get("score", 0.0))
            e["provenance"] = list(e.get("provenance", [])) + list(d.get("provenance", []))
        else:
            record["touched_edges"].append((head, tail, k, None))
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

    graph.graph.setdefault("merges", []).append(record)
    log.debug("merged %r into %r (%s, %.3f)", alias, canonical, reason, score)
    return _as_merge(record)


def undo_merge(graph: nx.MultiDiGraph, alias_key: str) -> Merge:
    """Restore `alias_key` and its edges, and take back what its merge added to the canonical node.

    Later merges are undone first and then redone, so the result is exactly the graph as if
    this merge had never happened.
    """
    records: list[dict[str, Any]] = graph.graph.get("merges", [])
    index = next((i for i in range(len(records) - 1, -1, -1) if records[i]["alias"] == alias_key), None)
    if index is None:
        raise KeyError(f"no merge of {alias_key!r} is recorded in this graph")
    target, later = records[index], records[index + 1 :]
    for record in reversed(records[index:]):
        _undo_record(graph, record)
    del records[index:]
    for record in later:
        merge_nodes(graph, record["alias"], record["canonical"], reason=record["reason"], score=record["score"])
    assign_hids(graph)
    return _as_merge(target)


def merges(graph: nx.MultiDiGraph) -> list[Merge]:
    """The merges recorded in the graph, oldest first."""
    return [_as_merge(r) for r in graph.graph.get("merges", [])]


def _as_merge(record: dict[str, Any]) -> Merge:
    return Merge(*(record[k] for k in ("alias", "canonical", "type", "reason", "score")))


def _undo_record(graph: nx.MultiDiGraph, record: dict[str, Any]) -> None:
    """Exact inverse of merge_nodes, valid when no later merge is still applied."""
    for head, tail, key, before in reversed(record["touched_edges"]):
        if before is None:
            graph.remove_edge(head, tail, key=key)
        else:
            data = graph.edges[head, tail, key]
            data.clear()
            data.update(copy.deepcopy(before))
    graph.add_node(record["alias"], **copy.deepcopy(record["alias_node"]))
    for u, v, k, d in record["alias_edges"]:
        graph.add_edge(u, v, key=k, **copy.deepcopy(d))
    node = graph.nodes[record["canonical"]]
    node.clear()
    node.update(copy.deepcopy(record["canonical_node"]))
    conflicts = graph.graph.setdefault("type_conflicts", {})
    for key, entry in record["type_conflicts"].items():
        if entry is None:
            conflicts.pop(key, None)
        else:
            conflicts[key] = copy.deepcopy(entry)
