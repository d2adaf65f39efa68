"""Answers on whole documents: the demo's build of each sample corpus, asked short factoid questions.

    python -m bench.article_qa [--corpora barack_obama a_christmas_carol dulce] [--variants naive,local]
                               [--context-tokens 1500] [--json bench/results/article-qa.json]

Each corpus is built as `make demo` builds the Obama article (spaCy extractor, MiniLM, community
reports for communities of 5+ entities by Qwen2.5-Coder-0.5B-Instruct, examples/demo.sh's
settings) into bench/out/article_qa/, once. Every question of bench/data/article_qa/ is asked in
each variant with the same reader and the demo's `--context-tokens 1500`:
- naive, local: the library's defaults;
- local_graphrag: local search with GraphRAG's context (community reports 15%, the entity table);
- local_reports, local_entities: the defaults plus only one of those tables.
Scores: the first line of the answer, citations stripped (bench/answers.py's extract_answer), against
the gold answer and its variants (the best of them): exact match and token F1 (SQuAD
normalization), and "contains" (a gold answer appears in the answer, normalized), with 95%
bootstrap intervals and paired differences. barack_obama is the tuning set (the local context's
default was chosen on it), the others are held out (bench/data/article_qa/README.md).
Model calls go through a CallCache in the work folder, so a rerun replays them.
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

from .answers import exact_match, extract_answer, mean_ci, normalize_answer, paired, token_f1
from .common import ROOT, dump_json, git_commit, machine_info, quiet_logs

log = logging.getLogger("bench.article_qa")

DATA = ROOT / "bench" / "data" / "article_qa"
CORPORA = {
    "barack_obama": ROOT / "examples" / "data" / "barack_obama.txt",
    "a_christmas_carol": ROOT.parent / "shared" / "data" / "corpora" / "a_christmas_carol.txt",
    "dulce": ROOT.parent / "shared" / "data" / "corpora" / "dulce.txt",
}
TUNING = {"barack_obama"}
READER = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
VARIANTS = {  # LocalConfig changes of each local variant (naive takes none)
    "naive": None,
    "local": {},
    "local_graphrag": {"community_share": 0.15, "entity_table": True},
    "local_reports": {"community_share": 0.15},
    "local_entities": {"entity_table": True},
}


def build(name: str, work: Path, models_dir: Path | None) -> Path:
    """The demo's build of one corpus (examples/demo.sh's settings), once."""
    from tiny_graphrag.config import BuildConfig, CommunityConfig, ExtractionConfig, LLMConfig
    from tiny_graphrag.index.store import MANIFEST
    from tiny_graphrag.indexing.pipeline import build_index

    out = work / name
    if (out / MANIFEST).is_file():
        return out
    config = BuildConfig(
        extraction=ExtractionConfig(extractor="spacy"),
        communities=CommunityConfig(max_cluster_size=200),
        llm=LLMConfig(model=READER, report_min_size=5, max_report_tokens=300, report_context_tokens=1200),
        models_dir=str(models_dir) if models_dir else None,
        cache_dir=str(work / ".cache"),
    )
    build_index(CORPORA[name], out, config=config, progress=False)
    return out


def score(answer: str, golds: Sequence[str]) -> dict[str, float]:
    said = extract_answer(answer)
    return {
        "em": max(exact_match(said, g) for g in golds),
        "f1": max(token_f1(said, g) for g in golds),
        "contains": float(any(normalize_answer(g) and normalize_answer(g) in normalize_answer(said) for g in golds)),
    }


def ask(index: Path, questions: list[dict], variants: Sequence[str], context_tokens: int, cache: Path) -> list[dict]:
    from tiny_graphrag.index.cache import CallCache
    from tiny_graphrag.search.config import LocalConfig, SearchConfig
    from tiny_graphrag.search.engine import QueryEngine

    records = []
    with QueryEngine(index, config=SearchConfig(context_tokens=context_tokens), cache=CallCache(cache)) as qe:
        for q in questions:
            rec: dict[str, Any] = {"question": q["question"], "gold": q["answers"], "variants": {}}
            for v in variants:
                t0 = time.perf_counter()
                if VARIANTS[v] is None:
                    r = qe.naive_search(q["question"])
                else:
                    r = qe.local_search(q["question"], config=LocalConfig(**VARIANTS[v]))
                rec["variants"][v] = {
                    "answer": r.answer,
                    **score(r.answer, q["answers"]),
                    "context_tokens": r.context_tokens,
                    "seconds": round(time.perf_counter() - t0, 2),
                }
            records.append(rec)
            log.info("%s: %s", q["question"], {v: x["answer"][:40] for v, x in rec["variants"].items()})
    return records


def summarize(records: list[dict], variants: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(records), "variants": {}, "paired": {}}
    for v in variants:
        out["variants"][v] = {m: mean_ci([r["variants"][v][m] for r in records]) for m in ("em", "f1", "contains")}
    for a in variants:  # every variant against the default local search, and that against naive
        for b in variants:
            if (b == "local" and a not in ("local", "naive")) or (a, b) == ("local", "naive"):
                out["paired"][f"{a} - {b}"] = {
                    m: paired([r["variants"][a][m] for r in records], [r["variants"][b][m] for r in records])
                    for m in ("f1", "contains")
                }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", nargs="+", choices=list(CORPORA), default=list(CORPORA))
    ap.add_argument("--variants", default="naive,local,local_graphrag")
    ap.add_argument("--context-tokens", type=int, default=1500)
    ap.add_argument("--models-dir", type=Path, default=None)
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "out" / "article_qa")
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "article-qa.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_logs()
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        ap.error(f"unknown variants {sorted(unknown)}: choose from {', '.join(VARIANTS)}")
    args.work.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python -m bench.article_qa", *(argv if argv is not None else sys.argv[1:])])
    result: dict[str, Any] = {
        "command": command,
        "reader": READER,
        "context_tokens": args.context_tokens,
        "commit": git_commit(),
        "machine": machine_info(),
        "corpora": {},
    }
    t0 = time.perf_counter()
    for name in args.corpora:
        index = build(name, args.work, args.models_dir)
        questions = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
        records = ask(index, questions, variants, args.context_tokens, args.work / ".cache" / "answers.sqlite")
        result["corpora"][name] = {
            "role": "tuning" if name in TUNING else "held out",
            **summarize(records, variants),
            "records": records,
        }
        for v, s in result["corpora"][name]["variants"].items():
            print(
                f"{name:18s} {v:15s} EM {s['em']['mean']:5.1f} F1 {s['f1']['mean']:5.1f} {s['f1']['ci95']} "
                f"contains {s['contains']['mean']:5.1f} {s['contains']['ci95']}"
            )
        for k, s in result["corpora"][name]["paired"].items():
            print(
                f"{name:18s} {k:28s} F1 {s['f1']['mean']:+5.1f} {s['f1']['ci95']} contains {s['contains']['mean']:+5.1f} "
                f"{s['contains']['ci95']}"
            )
    result["seconds"] = round(time.perf_counter() - t0, 1)
    dump_json(result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
