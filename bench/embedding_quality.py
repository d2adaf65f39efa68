"""Dense passage recall of embedding choices, and the embedders' throughput, in one run.

    python -m bench.embedding_quality [--sets DIR ...] [--models all-MiniLM-L6-v2 all-mpnet-base-v2] [--json F]

For each question set (hotpotqa100 and bench/data/2wiki30 by default) the passages are embedded
as the retrieval bench indexes them and ranked by cosine to each question:
- "title+text, windows": "title\\ntext", a passage longer than the model reads embedded as the
  length-weighted mean of its windows (the library default, Embedder(whole_text=True));
- "title+text, truncated": the same, cut at the model's limit (whole_text=False, as before);
- "text only, windows": without the title.
Each model runs the first variant; MiniLM runs all three. Recall@2/5/10 with 95% bootstrap
intervals, paired differences against MiniLM's default, and the share of passages longer than
the model's window. Throughput: the same 256 passages embedded by each model, alternating, best
of two runs, as passages/s and the ratio to MiniLM (same process, same texts).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import retrieval_eval as rev

log = logging.getLogger("bench.embedding_quality")
MINILM = "all-MiniLM-L6-v2"


def _cell(vals: np.ndarray) -> dict:
    lo, hi = rev.bootstrap_interval(vals)
    return {"mean": round(100 * float(vals.mean()), 1), "ci95": [round(100 * lo, 1), round(100 * hi, 1)]}


def dense_recalls(qvecs: np.ndarray, pvecs: np.ndarray, titles: list[str], questions) -> dict[int, np.ndarray]:
    order = np.argsort(-(qvecs @ pvecs.T), axis=1, kind="stable")[:, :10]
    ranked = [[titles[j] for j in row] for row in order]
    return {k: np.array([rev.recall_at(r, q.gold, k) for r, q in zip(ranked, questions)]) for k in rev.KS}


def long_share(embedder, texts: list[str]) -> float:
    tok = embedder.model.tokenizer
    room = embedder.model.max_seq_length - 2
    ids = tok(texts, add_special_tokens=False)["input_ids"]
    return round(100 * sum(1 for t in ids if len(t) > room) / max(len(ids), 1), 1)


def throughput(embedders: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    best = {name: float("inf") for name in embedders}
    for e in embedders.values():
        e.embed(texts[:8])  # warm-up
    for _ in range(2):
        for name, e in embedders.items():
            t0 = time.perf_counter()
            e.embed(texts)
            best[name] = min(best[name], time.perf_counter() - t0)
    base = best[MINILM]
    return {
        name: {
            "passages_per_s": round(len(texts) / s, 1),
            "seconds": round(s, 2),
            "time_ratio_to_minilm": round(s / base, 2),
        }
        for name, s in best.items()
    }


def run(sets: Sequence[Path], models: Sequence[str], models_dir: str | None) -> dict[str, Any]:
    from tiny_graphrag.backends.embed import Embedder

    embedders = {m: Embedder(m, models_dir=models_dir) for m in models}
    truncating = Embedder(MINILM, models_dir=models_dir, whole_text=False)
    out: dict[str, Any] = {"models": {m: e.describe() for m, e in embedders.items()}, "sets": {}}
    sample: list[str] = []
    for data in sets:
        questions, corpus = rev.load_hotpotqa(data)
        titles = list(corpus)
        with_title = [rev.passage_text(t, corpus[t]) for t in titles]
        sample = sample or with_title[:256]
        variants: dict[str, dict[int, np.ndarray]] = {}
        facts: dict[str, Any] = {}
        for m, e in embedders.items():
            q = e.embed([x.text for x in questions])
            variants[f"{m}: title+text, windows"] = dense_recalls(q, e.embed(with_title), titles, questions)
            facts[f"{m}: passages longer than the window (%)"] = long_share(e, with_title)
            if m == MINILM:
                variants[f"{m}: title+text, truncated"] = dense_recalls(
                    q, truncating.embed(with_title), titles, questions
                )
                variants[f"{m}: text only, windows"] = dense_recalls(
                    q, e.embed([corpus[t] for t in titles]), titles, questions
                )
        base = variants[f"{MINILM}: title+text, windows"]
        out["sets"][data.name] = {
            "questions": len(questions),
            "passages": len(titles),
            **facts,
            "recall": {v: {f"@{k}": _cell(r[k]) for k in rev.KS} for v, r in variants.items()},
            "paired_vs_minilm_default": {
                v: {f"@{k}": _cell(r[k] - base[k]) for k in rev.KS} for v, r in variants.items() if r is not base
            },
        }
    out["throughput"] = throughput(embedders, sample)
    out["throughput_texts"] = f"{len(sample)} hotpotqa100 passages (title+text), batch 64, CPU"
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=Path, nargs="*", default=[rev.DEFAULT_DATA, rev.ROOT / "bench" / "data" / "2wiki30"])
    ap.add_argument("--models", nargs="*", default=[MINILM, "all-mpnet-base-v2"])
    ap.add_argument("--models-dir")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    result = run(args.sets, args.models, args.models_dir)
    sys.stdout.write(json.dumps(result, indent=1) + "\n")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
