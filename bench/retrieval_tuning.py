"""Retrieval settings chosen on one half of the question sets and measured on the other.

    python -m bench.retrieval_tuning [--data DIR ...] [--also DIR ...] [--json out.json]

The questions of every --data set (hotpotqa100 and bench/data/musique by default: one set whose
BM25 is as strong as dense retrieval, one where it is far weaker) are split into two halves
(even and odd positions). On the even halves of all sets together, then on the odd ones, this
chooses
- the fusion of the dense and keyword rankings (RRF constant and weights, or min-max score
  fusion, its weights and its back-off from a flat keyword ranking) that maximizes the worst
  margin over the better single retriever, min over sets and k in (2, 5, 10) of recall@k(fused) - max(recall@k(dense), recall@k(bm25)):
  the issue's "never worse than its best component", as a number to maximize;
- local search's settings (PageRank damping, seed chunks, passage weight, entity seed weights,
  text prior, text chunks kept first, linking thresholds, synonym links) that maximize the mean
  over sets of recall@5 - dense recall@5, by coordinate ascent from fixed starting settings
  (two passes over one setting at a time);
and reports dense, BM25, plain RRF (k=60), the chosen fusion and the chosen local settings on the
*other* halves, with 95% bootstrap intervals and paired differences. The library defaults are
the same procedure on all questions of the --data sets. Every --also set (bench/data/2wiki30,
bench/data/musique_b) is measured with the settings chosen on each half and on all, never tuned on. A stress test
re-fuses with a weaker keyword ranking (every other content word of each query).

Entity-linking recall: the share of gold passages in which at least one linked entity is
mentioned (so the walk can start on the passage's own entities), and the share of questions
with any link at all.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import retrieval_eval as rev

log = logging.getLogger("bench.retrieval_tuning")
KS = rev.KS


@dataclasses.dataclass
class Prepared:
    """What every setting is evaluated from: computed once per question."""

    questions: list[rev.Question]
    vectors: np.ndarray
    ranked: list[Any]  # search.naive.Ranked at the default fusion (dense and keyword lists kept)
    linked: list[list[Any]]
    titles: Callable[[Sequence[str]], list[str]]


def prepare(engine, questions: list[rev.Question], local_config=None) -> Prepared:
    title_of = {d.id: d.source.split(":", 1)[1] for d in engine.store.documents()}
    chunk_doc = {c.id: c.doc_id for c in engine.store.chunks()}

    def titles(ids: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(title_of[chunk_doc[c]] for c in ids))

    from tiny_graphrag.search.config import LocalConfig

    vectors = engine.embedder.embed([q.text for q in questions])
    ranked = [engine.index.hybrid.rank(q.text, v) for q, v in zip(questions, vectors)]
    config = local_config or LocalConfig()
    linked = [engine.index.local.link(q.text, v, config) for q, v in zip(questions, vectors)]
    return Prepared(questions, vectors, ranked, linked, titles)


def recalls(rankings: list[list[str]], questions: list[rev.Question]) -> dict[int, np.ndarray]:
    return {k: np.array([rev.recall_at(r, q.gold, k) for r, q in zip(rankings, questions)]) for k in KS}


def fused_rankings(p: Prepared, fusion) -> tuple[list[Any], list[list[str]]]:
    from tiny_graphrag.search.hybrid import fuse

    out = [dataclasses.replace(r, fused=tuple(fuse(list(r.dense), list(r.keyword), fusion))) for r in p.ranked]
    return out, [p.titles(r.ids("fused")) for r in out]


def local_rankings(engine, p: Prepared, fusion, config, ranked: list[Any]) -> list[list[str]]:
    out = []
    for q, v, linked, r in zip(p.questions, p.vectors, links(engine, p, config), ranked):
        cand = engine.index.local.retrieve(q.text, v, config, fusion, linked=linked, hybrid=r)
        out.append(p.titles([c for c, _ in cand.chunks]))
    return out


def links(engine, p: Prepared, config) -> list[list[Any]]:
    """The prepared links, or new ones when `config` links differently from the defaults."""
    from tiny_graphrag.search.config import LocalConfig

    d = LocalConfig()
    if (config.top_entities, config.min_similarity) == (d.top_entities, d.min_similarity):
        return p.linked
    key = (tuple(q.id for q in p.questions), config.top_entities, config.min_similarity)
    if key not in _LINKS:
        _LINKS[key] = [engine.index.local.link(q.text, v, config) for q, v in zip(p.questions, p.vectors)]
    return _LINKS[key]


_LINKS: dict = {}


def _plain_rrf():
    from tiny_graphrag.search.config import FusionConfig

    return FusionConfig(method="rrf", k=60, flat_keyword_backoff=None)  # Cormack et al.'s, no back-off


# ---- the grids ---------------------------------------------------------------------------
def fusion_grid() -> list:
    from tiny_graphrag.search.config import FusionConfig

    # Written out: FusionConfig's default backs off from flat keyword rankings; these are plain.
    grid = [
        FusionConfig(method="rrf", k=k, keyword_weight=w, flat_keyword_backoff=None)
        for k, w in itertools.product((10, 30, 60, 100), (0.25, 0.5, 0.75, 1.0, 1.5))
    ]
    grid += [
        FusionConfig(method="score", dense_weight=1.0, keyword_weight=w, flat_keyword_backoff=b)
        for b, w in itertools.product((None, 1.0, 2.0, 3.0), (0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0))
    ]
    return grid


LOCAL_AXES: dict[str, tuple] = {
    "min_similarity": (0.4, 0.5, 0.6),
    "top_entities": (5, 10, 20),
    "damping": (0.3, 0.5, 0.7, 0.85),
    "seed_chunks": (1, 3, 5, 10, 20, 100),
    "passage_weight": (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0),  # HippoRAG 2 uses 0.05
    "seed_by": ("link", "similarity"),
    "prior_weight": (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
    "keep_text_top": (0, 1, 2),
    "synonym_similarity": (None, 0.8, 0.85, 0.9, 0.95),  # HippoRAG uses 0.8
    "cooccurrence_weight": (0.0, 0.1, 0.3, 1.0, 3.0),  # 1: the walk before this axis
}


def _mean(x: np.ndarray, idx: np.ndarray) -> float:
    return float(x[idx].mean())


def choose_fusion(tune: Sequence[tuple[Any, Prepared, np.ndarray]]) -> tuple[Any, dict]:
    """The fusion with the largest worst margin over max(dense, bm25): min over the tuning sets
    and over k of recall@k(fused) - max(recall@k(dense), recall@k(bm25)) on questions `idx`.
    The worst set counts, not the mean: "never worse than its best component" on every set."""
    singles = [
        (
            recalls([p.titles(r.ids("dense")) for r in p.ranked], p.questions),
            recalls([p.titles(r.ids("keyword")) for r in p.ranked], p.questions),
        )
        for _, p, _ in tune
    ]
    best, best_key, rows = None, None, []
    for f in fusion_grid():
        margins, total = [], 0.0
        for (_, p, idx), (dense, bm25) in zip(tune, singles):
            rec = recalls(fused_rankings(p, f)[1], p.questions)
            margins.append(min(_mean(rec[k], idx) - max(_mean(dense[k], idx), _mean(bm25[k], idx)) for k in KS))
            total += sum(_mean(rec[k], idx) for k in KS)
        key = (round(min(margins), 9), round(total, 9))
        rows.append({"fusion": _describe(f), "margins": [round(100 * m, 1) for m in margins]})
        if best_key is None or key > best_key:
            best, best_key = f, key
    return best, {"tried": len(rows), "best_worst_margin": round(100 * best_key[0], 1)}


def choose_local(tune: Sequence[tuple[Any, Prepared, np.ndarray]], fusion, passes: int = 2) -> tuple[Any, list]:
    """Coordinate ascent on the mean over the tuning sets of recall@5 - dense recall@5 (ties:
    mean recall@2/5/10) over LOCAL_AXES."""
    from tiny_graphrag.search.config import LocalConfig

    subs = []
    for engine, p, idx in tune:
        ranked, _ = fused_rankings(p, fusion)
        sub_p = Prepared(
            [p.questions[i] for i in idx],
            p.vectors[idx],
            [p.ranked[i] for i in idx],
            [p.linked[i] for i in idx],
            p.titles,
        )
        subs.append((engine, sub_p, [ranked[i] for i in idx]))
    cache: dict = {}

    def value(cfg) -> tuple:
        if cfg not in cache:
            r5 = total = 0.0
            for engine, sub_p, sub_ranked in subs:
                rec = recalls(local_rankings(engine, sub_p, fusion, cfg, sub_ranked), sub_p.questions)
                r5 += float(rec[5].mean()) / len(subs)
                total += sum(float(rec[k].mean()) for k in KS) / len(subs)
            cache[cfg] = (round(r5, 9), round(total, 9))
        return cache[cfg]

    # The start: the settings before this tuning (fixed here, so a rerun retraces the same path).
    current = LocalConfig(
        damping=0.5,
        seed_chunks=3,
        passage_weight=1.0,
        seed_by="link",
        keep_text_top=2,
        prior_weight=0.0,
        top_entities=10,
        min_similarity=0.6,
        synonym_similarity=None,
        cooccurrence_weight=1.0,
    )
    trace = []
    for _ in range(passes):
        for axis, values in LOCAL_AXES.items():
            cands = [dataclasses.replace(current, **{axis: v}) for v in values]
            current = max(cands, key=value)
            trace.append({axis: getattr(current, axis), "mean_recall@5": round(100 * value(current)[0], 1)})
    return current, trace


def _describe(obj) -> dict:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


# ---- reporting ---------------------------------------------------------------------------
def _cell(vals: np.ndarray) -> dict:
    lo, hi = rev.bootstrap_interval(vals)
    return {"mean": round(100 * float(vals.mean()), 1), "ci95": [round(100 * lo, 1), round(100 * hi, 1)]}


def report(engine, p: Prepared, idx: np.ndarray, fusion, local) -> dict[str, Any]:
    """Recall@k with intervals per mode on questions `idx`, paired differences, linking recall."""
    qs = [p.questions[i] for i in idx]
    sub = Prepared(qs, p.vectors[idx], [p.ranked[i] for i in idx], [p.linked[i] for i in idx], p.titles)
    ranked, fused_titles = fused_rankings(sub, fusion)
    modes = {
        "dense": [p.titles(r.ids("dense")) for r in sub.ranked],
        "bm25": [p.titles(r.ids("keyword")) for r in sub.ranked],
        "rrf60": fused_rankings(sub, _plain_rrf())[1],
        "fusion": fused_titles,
        "local": local_rankings(engine, sub, fusion, local, ranked),
    }
    rec = {m: recalls(r, qs) for m, r in modes.items()}
    out: dict[str, Any] = {"questions": len(qs)}
    out["recall"] = {m: {f"@{k}": _cell(rec[m][k]) for k in KS} for m in modes}
    pairs = [("fusion", "dense"), ("fusion", "bm25"), ("fusion", "rrf60"), ("local", "dense"), ("local", "fusion")]
    out["paired"] = {f"{a}-{b}": {f"@{k}": _cell(rec[a][k] - rec[b][k]) for k in KS} for a, b in pairs}
    out["linking"] = linking_recall(engine, sub, links(engine, sub, local))
    return out


def linking_recall(engine, p: Prepared, linked_lists: list[list[Any]]) -> dict[str, float]:
    """Share of gold passages mentioning a linked entity; share of questions with any link."""
    gi = engine.index.graph_index
    doc_of = {c.id: c.doc_id for c in engine.store.chunks()}
    title_of = {d.id: d.source.split(":", 1)[1] for d in engine.store.documents()}
    hit = total = 0
    for q, linked in zip(p.questions, linked_lists):
        titles = set()
        for e in linked:
            for c in gi.node_chunks[gi.pos[e.key]]:
                titles.add(title_of[doc_of[c]])
        hit += sum(1 for t in q.gold if t in titles)
        total += len(q.gold)
    return {
        "gold_passages_with_a_linked_entity": round(100 * hit / max(total, 1), 1),
        "questions_with_a_link": round(100 * sum(1 for x in linked_lists if x) / max(len(linked_lists), 1), 1),
        "linked_per_question": round(float(np.mean([len(x) for x in linked_lists])), 2),
    }


def weak_keyword_stress(engine, p: Prepared) -> dict[str, Any]:
    """Fusions when the keyword ranking is weaker: every other content word of each query
    dropped (the case where plain RRF lost recall: BM25 much weaker than dense)."""
    from tiny_graphrag.search.config import FusionConfig
    from tiny_graphrag.search.hybrid import fuse, keyword_query

    def weak(q: str) -> str:
        return " ".join(keyword_query(q).split()[::2])

    keyword = [engine.store.keyword_search(weak(q.text), 100) for q in p.questions]
    dense = recalls([p.titles(r.ids("dense")) for r in p.ranked], p.questions)
    bm25 = recalls([p.titles([c for c, _ in k]) for k in keyword], p.questions)
    out: dict[str, Any] = {
        "dense": {k: round(100 * float(v.mean()), 1) for k, v in dense.items()},
        "weak_bm25": {k: round(100 * float(v.mean()), 1) for k, v in bm25.items()},
    }
    plain = {"flat_keyword_backoff": None}
    for f in (
        _plain_rrf(),
        FusionConfig(method="rrf", k=10, keyword_weight=1.5, **plain),
        FusionConfig(method="score", **plain),
        FusionConfig(method="score", keyword_weight=0.5, **plain),
        FusionConfig(),
    ):
        rec = recalls(
            [p.titles([c for c, _ in fuse(list(r.dense), k, f)]) for r, k in zip(p.ranked, keyword)], p.questions
        )
        out[f"{f.method} k={f.k} kw={f.keyword_weight} backoff={f.flat_keyword_backoff}"] = {
            k: round(100 * float(v.mean()), 1) for k, v in rec.items()
        }
    return out


def _engine(data: Path, work: Path):
    from tiny_graphrag.search.engine import QueryEngine

    questions, corpus = rev.load_hotpotqa(data)
    index = rev.build_passage_index(work / f"{data.name}-spacy", corpus, extractor="spacy")
    return QueryEngine(index), questions


def run(data: Sequence[Path], also: Sequence[Path], work: Path, fixed_fusion=None) -> dict[str, Any]:
    """Settings chosen jointly on one half of every --data set, reported on the other halves;
    the library defaults chosen on all their questions; every --also set measured, never tuned on."""
    sets = []
    for d in data:
        engine, questions = _engine(d, work)
        n = len(questions)
        sets.append(
            (d.name, engine, prepare(engine, questions), {"even": np.arange(0, n, 2), "odd": np.arange(1, n, 2)})
        )
    result: dict[str, Any] = {
        "sets": [name for name, *_ in sets],
        "halves": {},
        "also": {},
        "weak_keyword_stress": {name: weak_keyword_stress(e, p) for name, e, p, _ in sets},
    }
    chosen = {}
    for half in ("even", "odd"):
        other = "odd" if half == "even" else "even"
        tune = [(e, p, h[half]) for _, e, p, h in sets]
        fusion, finfo = (fixed_fusion, {"fixed": True}) if fixed_fusion else choose_fusion(tune)
        local, trace = choose_local(tune, fusion)
        chosen[half] = (fusion, local)
        log.info("tuned on the %s halves: %s / %s", half, _describe(fusion), _describe(local))
        result["halves"][f"tuned_on_{half}_reported_on_{other}"] = {
            "fusion": _describe(fusion),
            "fusion_search": finfo,
            "local": _describe(local),
            "local_search": trace,
            "report": {name: report(e, p, h[other], fusion, local) for name, e, p, h in sets},
        }
    # The library defaults: the same procedure on all questions (in-sample there, so only the
    # halves above say what it is worth on these sets; the --also sets measure it held out).
    tune = [(e, p, np.arange(len(p.questions))) for _, e, p, _ in sets]
    fusion = fixed_fusion or choose_fusion(tune)[0]
    local, trace = choose_local(tune, fusion)
    chosen["all"] = (fusion, local)
    result["tuned_on_all"] = {"fusion": _describe(fusion), "local": _describe(local), "local_search": trace}
    for _, e, _, _ in sets:
        e.close()
    for extra in also:
        e2, q2 = _engine(extra, work)
        p2 = prepare(e2, q2)
        all_idx = np.arange(len(q2))
        result["also"][extra.name] = {
            f"settings_from_{h}": report(e2, p2, all_idx, f, l) for h, (f, l) in chosen.items()
        }
        e2.close()
    return result


def format_report(r: dict[str, Any]) -> str:
    lines = []

    def block(title: str, rep: dict):
        lines.append(f"{title} ({rep['questions']} questions)")
        for m, row in rep["recall"].items():
            lines.append(
                f"  {m:7s} "
                + "  ".join(f"R{k} {c['mean']:5.1f} [{c['ci95'][0]:5.1f},{c['ci95'][1]:5.1f}]" for k, c in row.items())
            )
        for m, row in rep["paired"].items():
            lines.append(
                f"  {m:14s} "
                + "  ".join(
                    f"R{k} {c['mean']:+5.1f} [{c['ci95'][0]:+5.1f},{c['ci95'][1]:+5.1f}]" for k, c in row.items()
                )
            )
        lines.append(f"  linking {rep['linking']}")

    for name, row in r.get("weak_keyword_stress", {}).items():
        lines.append(f"weak-keyword stress, {name}: {row}")
    if "tuned_on_all" in r:
        lines.append(f"tuned on all: {r['tuned_on_all']['fusion']} / {r['tuned_on_all']['local']}")
    for name, h in r["halves"].items():
        lines.append(f"{name}: fusion {h['fusion']}")
        lines.append(f"  local {h['local']}")
        for s, rep in h["report"].items():
            block(f"{s} {name}", rep)
    for s, reps in r["also"].items():
        for h, rep in reps.items():
            block(f"{s} {h}", rep)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data",
        type=Path,
        nargs="+",
        default=[rev.DEFAULT_DATA, rev.ROOT / "bench" / "data" / "musique"],
        help="the sets tuned on, jointly, half by half",
    )
    ap.add_argument(
        "--also",
        type=Path,
        nargs="*",
        default=[rev.ROOT / "bench" / "data" / "2wiki30", rev.ROOT / "bench" / "data" / "musique_b"],
    )
    ap.add_argument("--work", type=Path, default=rev.ROOT / "bench" / "out" / "retrieval")
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--fusion",
        choices=("choose", "default"),
        default="choose",
        help="choose the fusion per tuning half, or keep the library's default fusion and tune local only",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from tiny_graphrag.search.config import FusionConfig

    result = run(args.data, args.also, args.work, FusionConfig() if args.fusion == "default" else None)
    sys.stdout.write(format_report(result) + "\n")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
