"""Local search: context-building latency, no LLM call (`local_search(q, only_context=True)`).

Per query: embed the query (all-MiniLM-L6-v2), link entities, rank (hybrid + personalized
PageRank over entities and chunks), build the context within the token budget. Reported as
p50/p95 over the queries, total and per step, after 2 warm-up queries (the first query builds
lazily cached matrices; the engine's load time is reported apart).

Indexes: the Obama article (spaCy extractor, stand-in reports: bench.standin), and a synthetic
graph of `synthetic_nodes` entities (100,000 by default) built through the library's own
build_graph from generated extractions: documents of 30 chunks, each about its own 60 entities
(every one mentioned ~3 times), 10% of mentions drawn from all entities with a Zipf-like skew
(hubs that join the topics), 6 mentions per chunk with "related to" relations between
neighbouring mentions; two community levels, the topics and their 10-entity parts (not Leiden:
see planted_communities), and a stand-in report per community. Its
chunk, entity and report vectors are random unit vectors (embedding 100k texts would take
minutes; a similarity search costs the same either way), so its queries link entities by exact
name ("How is A connected to B?").
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

import numpy as np

from .common import Context, percentile, rnd, stopwatch

log = logging.getLogger("bench.local_latency")

OBAMA_QUESTIONS = [
    "Where was Barack Obama born?",
    "Who is Michelle Obama?",
    "What did Obama study at Columbia University?",
    "Which law school did Obama attend?",
    "What was Obama's role in the Illinois Senate?",
    "Who was Obama's running mate in 2008?",
    "What is the Affordable Care Act?",
    "How did Obama respond to the financial crisis?",
    "What did Obama do in Chicago before politics?",
    "Who were Obama's parents?",
]
_SYL = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def _name(rng: random.Random) -> str:
    return " ".join("".join(rng.choice(_SYL) for _ in range(rng.randint(2, 3))).capitalize() for _ in range(2))


def build_synthetic_index(folder: Path, n_nodes: int, seed: int = 0) -> dict[str, Any]:
    """An index with `n_nodes` entities, written with the library's store and graph code."""
    from tiny_graphrag.backends.embed import Embedder
    from tiny_graphrag.index.graph import assign_hids, build_graph, normalize_name
    from tiny_graphrag.index.store import IndexStore
    from tiny_graphrag.records import (
        Chunk,
        Document,
        EntityMention,
        Extraction,
        Finding,
        RelationMention,
        Report,
        content_id,
    )
    from tiny_graphrag.schema import Schema

    rng = random.Random(seed)
    schema = Schema.preset("general")
    types = list(schema.entity_types)
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n_nodes:
        n = _name(rng)
        if n.lower() not in seen:
            seen.add(n.lower())
            names.append(n)
    etype = [types[i % len(types)] for i in range(n_nodes)]
    # Documents are topics: each has its own ~TOPIC entities, and its chunks mention mostly those
    # (90%), the rest drawn from all entities with a Zipf-like skew (hubs that link topics).
    per_chunk, mentions_per_entity, topic = 6, 3, 60
    chunks_per_doc = topic * mentions_per_entity // per_chunk
    n_docs = max(1, n_nodes // topic)
    weights = [1.0 / (r + 1) ** 0.8 for r in range(n_nodes)]
    hubs = iter(rng.choices(range(n_nodes), weights=weights, k=n_docs * chunks_per_doc * per_chunk))
    docs, chunks, extractions = [], [], []
    for d in range(n_docs):
        own = list(range(d * topic, n_nodes if d == n_docs - 1 else (d + 1) * topic))
        pool = own * mentions_per_entity  # every entity of the topic appears
        rng.shuffle(pool)
        texts, spans_of = [], []
        for ci in range(chunks_per_doc):
            ents = [pool.pop() if pool and rng.random() < 0.9 else next(hubs) for _ in range(per_chunk)]
            text, spans = "", []
            for j, ent in enumerate(ents):
                verb = ("met", "works with", "visited", "wrote about", "founded", "joined")[j % 6]
                start = len(text)
                text += names[ent]
                spans.append((ent, start, len(text)))
                text += f" {verb} " if j < len(ents) - 1 else "."
            texts.append(text)
            spans_of.append(spans)
        body = " ".join(texts)
        doc = Document(id=content_id("doc", "synthetic", d), text=body, source=f"synthetic:{d}")
        docs.append(doc)
        pos = 0
        for idx, (t, spans) in enumerate(zip(texts, spans_of)):
            c = Chunk(
                id=content_id("chunk", doc.id, pos),
                doc_id=doc.id,
                index=idx,
                text=t,
                start=pos,
                end=pos + len(t),
                n_tokens=len(t.split()),
            )
            ms = [EntityMention(t[s:e], etype[ent], s, e, 0.9) for ent, s, e in spans]
            rels = [
                RelationMention(ms[i], ms[i + 1], "related to", 0.8)
                for i in range(len(ms) - 1)
                if ms[i].text != ms[i + 1].text
            ]
            chunks.append(c)
            extractions.append(Extraction(c.id, tuple(ms), tuple(rels)))
            pos += len(t) + 1

    timings: dict[str, float] = {}
    with stopwatch() as t:
        graph = build_graph(chunks, extractions, schema)
        assign_hids(graph)
    timings["graph"] = t["s"]
    with stopwatch() as t:
        communities = planted_communities(graph, [normalize_name(n) for n in names], topic)
    timings["communities"] = t["s"]
    reports = []
    for c in communities:
        top = [graph.nodes[k].get("name", k) for k in c.nodes[:3]]
        reports.append(
            Report(
                c.id,
                c.level,
                "Community of " + ", ".join(top),
                f"{len(c.nodes)} entities around {', '.join(top)}.",
                float(min(10, len(c.nodes))),
                "size",
                (Finding(f"{top[0]} is central", "Generated for the benchmark."),),
            )
        )
    vec_rng = np.random.default_rng(seed)

    def unit(n: int) -> np.ndarray:
        m = vec_rng.standard_normal((n, 384)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    with stopwatch() as t:
        folder.mkdir(parents=True, exist_ok=True)
        store = IndexStore.create(folder)
        store.add_documents(docs)
        store.add_chunks(chunks)
        store.save_vectors("chunks", [c.id for c in chunks], unit(len(chunks)))
        keys = list(graph.nodes)
        store.save_vectors("entities", keys, unit(len(keys)))
        store.save_communities(communities)
        store.save_reports(reports)
        store.save_vectors("reports", [r.community_id for r in reports], unit(len(reports)))
        store.save_graph(graph)
        store.write_manifest(
            {
                "library_version": "bench-synthetic",
                "embedder": Embedder().describe(),
                "llm": None,
                "config": {},
                "bench": {"synthetic_nodes": n_nodes},
            }
        )
        store.close()
    timings["store"] = t["s"]
    return {
        "entities": graph.number_of_nodes(),
        "relations": graph.number_of_edges(),
        "chunks": len(chunks),
        "documents": len(docs),
        "communities": len(communities),
        "levels": len({c.level for c in communities}),
        "build_seconds": {k: rnd(v, 1) for k, v in timings.items()},
        "names": names,
    }


def planted_communities(graph, keys: list[str], topic: int, leaf: int = 10) -> list:
    """Two levels: each generated topic (level 0) and its consecutive parts of `leaf` entities (level 1).

    Not Leiden: hierarchical_communities on this 100k-node graph takes many minutes on 2 cores
    (each split re-reads every edge of the graph), and the community structure is only needed
    here for the reports local search shows.
    """
    from tiny_graphrag.records import Community, content_id

    def inner(nodes: tuple[str, ...]) -> tuple[tuple[str, str, str], ...]:
        inside = set(nodes)
        return tuple(
            sorted({(u, v, str(k)) for n in nodes for u, v, k in graph.out_edges(n, keys=True) if v in inside})
        )

    out = []
    for start in range(0, len(keys), topic):
        members = tuple(sorted(k for k in dict.fromkeys(keys[start : start + topic]) if k in graph))
        if not members:
            continue
        parent_id = content_id("com", 0, *members)
        kids = []
        for j in range(0, len(members), leaf):
            part = members[j : j + leaf]
            kid = Community(content_id("com", 1, *part), 1, part, parent=parent_id, edges=inner(part))
            kids.append(kid)
        out.append(Community(parent_id, 0, members, children=tuple(k.id for k in kids), edges=inner(members)))
        out.extend(kids)
    return out


def latency(path: Path, queries: list[str]) -> dict[str, Any]:
    from tiny_graphrag.search.engine import QueryEngine

    with stopwatch() as t_load:
        qe = QueryEngine(path)
    for q in queries[:2]:
        qe.local_search(q, only_context=True)
    parts: dict[str, list[float]] = {}
    linked = []
    tokens = []
    for q in queries:
        with stopwatch() as t:
            res = qe.local_search(q, only_context=True)
        parts.setdefault("total", []).append(1000 * t["s"])
        for k, v in res.seconds.items():
            if k != "total":
                parts.setdefault(k, []).append(1000 * v)
        # the graph side alone: everything but the query embedding (one small torch call, whose
        # time swings most when other processes compete for the cores)
        parts.setdefault("without_embedding", []).append(1000 * (t["s"] - res.seconds.get("embed_query", 0.0)))
        linked.append(len(res.details.get("linked_entities", [])))
        tokens.append(res.context_tokens)
    qe.close()
    out = {f"{k}_ms": {"p50": rnd(percentile(v, 50), 1), "p95": rnd(percentile(v, 95), 1)} for k, v in parts.items()}
    out.update(
        queries=len(queries),
        engine_load_seconds=rnd(t_load["s"], 2),
        linked_entities_mean=rnd(float(np.mean(linked)), 2),
        context_tokens_mean=rnd(float(np.mean(tokens)), 1),
    )
    return out


def obama_queries(path: Path, n: int, seed: int = 0) -> list[str]:
    from tiny_graphrag.index.store import IndexStore

    store = IndexStore.open(path)
    g = store.graph()
    store.close()
    top = sorted(g.nodes, key=lambda k: (-g.nodes[k].get("mentions", 0), k))[:60]
    rng = random.Random(seed)
    qs = list(OBAMA_QUESTIONS)
    while len(qs) < n:
        a, b = rng.sample(top, 2)
        qs.append(f"What is the relationship between {g.nodes[a].get('name', a)} and {g.nodes[b].get('name', b)}?")
    return qs[:n]


def run(ctx: Context) -> dict[str, Any]:
    from .standin import obama_index

    n = ctx.mode.local_queries
    info = obama_index(ctx)
    path = Path(info["path"])
    out: dict[str, Any] = {"obama": {"index": info["summary"], **latency(path, obama_queries(path, n))}}
    with stopwatch() as t:
        syn = build_synthetic_index(ctx.work / "synthetic", ctx.mode.synthetic_nodes)
    names = syn.pop("names")
    rng = random.Random(1)
    queries = [f"How is {a} connected to {b}?" for a, b in (rng.sample(names[:5000], 2) for _ in range(n))]
    out["synthetic"] = {"index": {**syn, "seconds": rnd(t["s"], 1)}, **latency(ctx.work / "synthetic", queries)}
    return out


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for key in ("obama", "synthetic"):
        m = r[key]
        idx = m["index"]
        steps = ", ".join(
            f"{k[:-3]} {v['p50']}/{v['p95']}"
            for k, v in m.items()
            if k.endswith("_ms") and k not in ("total_ms", "without_embedding_ms")
        )
        rows.append(
            (
                f"{key}: index",
                f"{idx.get('entities')} entities, {idx.get('relations')} relations, "
                f"{idx.get('chunks')} chunks; engine load {m['engine_load_seconds']} s",
            )
        )
        rows.append(
            (
                f"{key}: context p50 / p95 ms ({m['queries']} queries)",
                f"{m['total_ms']['p50']} / {m['total_ms']['p95']}  [{steps}]",
            )
        )
        rows.append(
            (
                f"{key}: without the query embedding p50 / p95 ms",
                f"{m['without_embedding_ms']['p50']} / {m['without_embedding_ms']['p95']}",
            )
        )
    return rows
