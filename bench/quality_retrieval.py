"""Retrieval quality: passage recall@2/5/10 with 95% intervals on hotpotqa100.

Uses bench/retrieval_eval.py (one chunk per passage, the library's spaCy extractor for the
graph, percentile-bootstrap intervals over questions) for the index, the rankings and the
metric, and adds the per-question top-10 titles of every mode to the JSON so the numbers can be
recomputed from it (`python -m bench.report --check`). Modes: dense (vector only), bm25 (keyword only),
hybrid (their fusion as FusionConfig sets it: naive search's ranking), local (the chunks local search would put in
its context, in order: hybrid + personalized PageRank from the linked entities).

Reference numbers for this set (given with the task, not measured here): plain all-MiniLM-L6-v2
cosine over whole passages R@2/5/10 = 62.5/78.5/85.0, plain BM25 58.5/77.5/90.0, their RRF
fusion (k=60) 63.0/81.5/88.5.
"""

from __future__ import annotations

import logging
from typing import Any

from .common import HOTPOT, Context, rnd, stopwatch

log = logging.getLogger("bench.quality_retrieval")

REFERENCE = {
    "dense (plain MiniLM cosine)": {"recall@2": 62.5, "recall@5": 78.5, "recall@10": 85.0},
    "bm25 (plain)": {"recall@2": 58.5, "recall@5": 77.5, "recall@10": 90.0},
    "rrf k=60 (plain)": {"recall@2": 63.0, "recall@5": 81.5, "recall@10": 88.5},
}
MODES = ("dense", "bm25", "hybrid", "local")


def run(ctx: Context) -> dict[str, Any]:
    from tiny_graphrag.search.engine import QueryEngine

    from . import retrieval_eval as rev

    questions, corpus = rev.load_hotpotqa(HOTPOT)
    note = "all 100 questions, all 994 passages"
    if ctx.mode.hotpot_questions:
        questions = questions[: ctx.mode.hotpot_questions]
        # quick mode: the selected questions' gold passages plus the first 100 others (easier: smoke test only)
        keep = {t for q in questions for t in q.gold} | set(list(corpus)[:100])
        corpus = {t: x for t, x in corpus.items() if t in keep}
        note = f"quick mode: {len(questions)} questions over {len(corpus)} passages (not comparable to the reference)"
    with stopwatch() as t_index:
        index = rev.build_passage_index(ctx.work / "hotpotqa-index", corpus, extractor="spacy")
    engine = QueryEngine(index)
    with stopwatch() as t_eval:
        ranks, seconds, linked = rev.rank_passages(engine, questions, MODES)
    engine.close()
    results = rev.score(ranks, questions, {m: seconds[m] for m in ("hybrid", "local")}, linked)
    return {
        "data": note,
        "graph": "library spaCy extractor (en_core_web_sm NER, sentence co-occurrence relations)",
        "results": results,
        "reference_not_measured_here": REFERENCE,
        "index_seconds": rnd(t_index["s"], 1),
        "eval_seconds": rnd(t_eval["s"], 1),
        "per_question": [
            {"id": q.id, "gold": list(q.gold), **{m: ranks[m][i][:10] for m in MODES}} for i, q in enumerate(questions)
        ],
    }


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("data", r["data"])]
    for mode in MODES:
        res = r["results"][mode]
        cells = "  ".join(
            f"R@{k} {res[f'recall@{k}']} [{res[f'recall@{k}_ci95'][0]}, {res[f'recall@{k}_ci95'][1]}]"
            for k in (2, 5, 10)
        )
        rows.append((f"ours: {mode}", cells))
    for pair, d in r["results"].get("paired_recall@5", {}).items():
        rows.append((f"paired R@5 difference {pair}", f"{d['diff']:+} [{d['ci95'][0]}, {d['ci95'][1]}]"))
    for name, ref in r["reference_not_measured_here"].items():
        rows.append((f"reference: {name}", f"R@2 {ref['recall@2']}  R@5 {ref['recall@5']}  R@10 {ref['recall@10']}"))
    return rows
