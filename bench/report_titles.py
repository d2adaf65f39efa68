"""Do community report titles say which community they are about? (issue 42: "measure them")

    python -m bench.report_titles graphs/obama [OTHER_INDEX ...] [--json out.json]

A title is read as a reader reads it: does it point at its own community rather than another? Each
top-level reported community's text is the mean of the embeddings (the index's own embedder) of the
chunks naming its entities, each chunk weighted by the share of its entities the community holds;
each title is embedded and ranked against every community's text. Reported per index: the share of
titles whose own community ranks first (top-1) and the mean reciprocal rank, for the stored titles
and, as a reference, for titles made of the community's three most connected entities (the fallback
before 0.7.2, which put hubs first: "Michelle, USA and America") and of its three entities most its
own (`reports.context.own_names`, the fallback since). Few communities per index: read the top-1
share as counts (say 8 of 12), not as a rate. Every title is listed for reading.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .common import dump_json


def joined(names: Sequence[str]) -> str:
    top = list(dict.fromkeys(names))[:3]
    return ", ".join(top[:-1]) + f" and {top[-1]}" if len(top) > 1 else (top[0] if top else "")


def measure(path: Path) -> dict[str, Any]:
    from tiny_graphrag import QueryEngine
    from tiny_graphrag.index.graph import node_chunks
    from tiny_graphrag.reports.context import own_names

    idx = QueryEngine(path).index
    graph, gi = idx.graph, idx.graph_index
    with sqlite3.connect(path / "index.sqlite") as db:
        reports = {cid: json.loads(body) for cid, body in db.execute("SELECT community_id, body FROM reports")}
    top = min(c.level for c in idx.communities if c.id in reports)
    comms = [c for c in idx.communities if c.level == top and c.id in reports]
    member = {n: k for k, c in enumerate(comms) for n in c.nodes}
    chunk_ids = gi.chunk_ids
    weights = np.zeros((len(comms), len(chunk_ids)))
    for j, cid in enumerate(chunk_ids):
        named = gi.entities_in(cid)
        for n in named:
            if n in member:
                weights[member[n], j] += 1 / len(named)
    vectors = np.asarray(idx.embed_texts([c.text for c in idx.store.chunks_by_id(chunk_ids)]), dtype=np.float32)
    centroids = weights @ vectors
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True) + 1e-9
    sizes = Counter(c for n in graph for c in node_chunks(graph, n))

    def name(n: str) -> str:
        return str(graph.nodes[n].get("name", n))

    titles = {
        "stored": [reports[c.id]["title"] for c in comms],
        "most connected": [
            joined([name(n) for n in sorted(c.nodes, key=lambda n: (-graph.degree(n), n))]) for c in comms
        ],
        "most its own": [joined(own_names(c, graph, sizes)) for c in comms],
    }
    out: dict[str, Any] = {"index": str(path), "level": top, "communities": len(comms), "rules": {}}
    for rule, texts in titles.items():
        sims = np.asarray(idx.embed_texts(texts), dtype=np.float32) @ centroids.T
        ranks = [int((sims[k] > sims[k, k]).sum()) + 1 for k in range(len(comms))]
        out["rules"][rule] = {
            "top1": sum(r == 1 for r in ranks),
            "mrr": round(float(np.mean([1 / r for r in ranks])), 3),
            "ranks": ranks,
            "titles": texts,
        }
        print(f"{path} {rule:15s} top-1 {out['rules'][rule]['top1']} of {len(comms)}, MRR {out['rules'][rule]['mrr']}")
    for k, c in enumerate(comms):
        print(f"  {c.id}: " + " | ".join(titles[r][k] for r in titles))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("indexes", type=Path, nargs="+")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    out = [measure(p) for p in args.indexes]
    if args.json:
        dump_json(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
