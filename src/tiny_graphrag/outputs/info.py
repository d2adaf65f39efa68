"""The summary of an index that `tiny-graphrag info` prints: counts, levels, top reports, models."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.outputs.notebook import community_sizes


def index_info(path: str | Path, top: int = 5) -> dict:
    """Documents, chunks, entities, relations, community levels and the top reports of an index."""
    store = IndexStore.open(path)
    m = store.manifest
    reports = sorted(store.reports(), key=lambda r: -r.rating)
    graph = store.graph()
    info = {
        "index": str(path),
        **{k: m.get(k) for k in ("format_version", "library_version", "created")},
        "documents": m.get("documents", []),
        "counts": m.get("counts", {}),
        "entities_per_type": dict(Counter(d.get("type") for _, d in graph.nodes(data=True))),
        "relations_per_label": dict(Counter(k for _, _, k in graph.edges(keys=True))),
        "merged_aliases": len(graph.graph.get("merges", [])),
        # reports built from the data because the model's output was unusable
        "fallback_reports": sum(1 for r in reports if r.fallback),
        "skipped_files": list((m.get("summary") or {}).get("skipped_files", [])),
        "levels": [
            dict(level=lvl, communities=len(s), min_size=min(s), max_size=max(s), mean_size=round(sum(s) / len(s), 2))
            for lvl, s in community_sizes(store).items()
        ],
        "top_reports": [
            {"community": r.community_id, "level": r.level, "rating": r.rating, "title": r.title, "summary": r.summary}
            for r in reports[:top]
        ],
        "models": {"extractor": m.get("extractor"), "embedder": m.get("embedder"), "llm": m.get("llm")},
        "tree": m.get("tree"),  # None: built without a RAPTOR tree
    }
    store.close()
    return info
