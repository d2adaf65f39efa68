"""Community sizes of an index's graph with and without chunk links (CommunityConfig.chunk_weight).

    python -m bench.community_sizes graphs/obama [--keep 0.05] [--weights 0,0.1,0.3] [--json out.json]

Leiden clusters the graph's relations; a small relation model finds few, and every entity it leaves
unlinked is a community of its own (the demo's hybrid index at 0.7.0: 245 of its 259 level-0
communities were single entities). Chunk links join entities named in the same chunk, weakly. Reported per weight: communities
in all levels, distinct member sets, level 0's count, singletons and sizes (min / median / max), the
leaves' likewise. `--keep` also clusters a copy of the graph keeping that share of its relations
(drawn with seed 0), standing in for a sparse relation model's graph over the same entities.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import networkx as nx

from .common import dump_json


def sizes(graph: nx.MultiDiGraph, weight: float) -> dict[str, Any]:
    from tiny_graphrag.config import CommunityConfig
    from tiny_graphrag.reports.communities import hierarchical_communities

    comms = hierarchical_communities(graph, CommunityConfig(chunk_weight=weight))
    level0 = [len(c.nodes) for c in comms if c.level == 0]
    leaves = [len(c.nodes) for c in comms if not c.children]

    def spread(xs: Sequence[int]) -> list[float]:
        return [min(xs), statistics.median(xs), max(xs)] if xs else []

    return {
        "communities": len(comms),
        "distinct": len({c.nodes for c in comms}),
        "level0": len(level0),
        "level0_singletons": sum(n == 1 for n in level0),
        "level0_sizes": spread(level0),
        "leaves": len(leaves),
        "leaf_singletons": sum(n == 1 for n in leaves),
        "leaf_sizes": spread(leaves),
    }


def thinned(graph: nx.MultiDiGraph, keep: float) -> nx.MultiDiGraph:
    out = graph.copy()
    edges = list(out.edges(keys=True))
    kept = set(random.Random(0).sample(range(len(edges)), round(len(edges) * keep)))
    out.remove_edges_from([e for i, e in enumerate(edges) if i not in kept])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("--keep", type=float, default=0.05)
    ap.add_argument("--weights", default="0,0.1,0.3")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    from tiny_graphrag.index.graph import load_graph

    graph = load_graph(args.index / "graph.pkl")  # the library's checked loader, never a bare pickle.load
    graphs = {"relations": graph}
    if args.keep < 1:
        graphs[f"{args.keep:.0%} of the relations"] = thinned(graph, args.keep)
    out: dict[str, Any] = {"index": str(args.index), "nodes": graph.number_of_nodes(), "edges": {}, "rows": []}
    for name, g in graphs.items():
        out["edges"][name] = g.number_of_edges()
        for w in (float(x) for x in args.weights.split(",")):
            row = {"graph": name, "chunk_weight": w, **sizes(g, w)}
            out["rows"].append(row)
            print(json.dumps(row))
    if args.json:
        dump_json(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
