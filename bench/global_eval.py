"""Global vs naive answers judged head to head (GraphRAG paper §4.1), on the Obama article and A Christmas Carol.

    python bench/global_eval.py --index obama=/tmp/idx_obama --index carol=/tmp/idx_carol \\
        --judge models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf --questions 6

Each index must already be built with community reports (`tiny-graphrag build`; the build's
settings are read from its manifest and written into the JSON). Per corpus: the judge writes
the questions (personas -> tasks -> questions), the index's LLM answers them with both modes,
the judge compares every pair on the four criteria in both orders. One JSON per corpus goes to
bench/results/global_eval_<name>.json: questions, answers, every verdict with its reasons, win
rates with 95% bootstrap intervals over questions, order agreement, and the settings.

The search budgets default to smaller than the library's (a 1-level index of 50-75 reports
would take ~10 map calls per question at the library's defaults, minutes each on a shared CPU):
dynamic selection maps at most 2 batches of the reports nearest the question, so a global answer is 1-2 map
calls and a reduce; both modes get the same context budget. `--library-defaults` drops them.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `python bench/global_eval.py` from the root

from bench.common import ROOT, dump_json, git_commit, machine_info, quiet_logs  # noqa: E402

log = logging.getLogger("bench.global_eval")


def search_config(args: argparse.Namespace):
    from tiny_graphrag.search.config import GlobalConfig, SearchConfig

    if args.library_defaults:
        return SearchConfig()
    return SearchConfig(
        answer_max_tokens=args.answer_max_tokens,
        context_tokens=args.context_tokens,
        global_=GlobalConfig(
            map_max_tokens=args.map_max_tokens,
            reduce_max_tokens=args.answer_max_tokens,
            dynamic_map_calls=args.map_calls,
        ),
    )


def run_one(name: str, index: Path, args: argparse.Namespace) -> dict:
    from tiny_graphrag.evaluation.head_to_head import evaluate, open_judge
    from tiny_graphrag.index.cache import CallCache
    from tiny_graphrag.outputs.info import index_info
    from tiny_graphrag.search.engine import QueryEngine

    info = index_info(index, top=0)
    # A persistent cache only to resume an interrupted run: a fresh file replays nothing.
    cache = CallCache(args.cache_dir / f"global_eval_{name}.sqlite") if args.cache_dir else None
    with QueryEngine(index, config=search_config(args), cache=cache) as qe:
        judge = open_judge(args.judge, qe, n_ctx=args.n_ctx, cache=cache)
        t0 = time.perf_counter()
        result = evaluate(
            qe,
            judge,
            questions=args.questions,
            a=args.a,
            b=args.b,
            source=args.source,
            answer_tokens=args.answer_tokens,
            seed=args.seed,
        )
        seconds = time.perf_counter() - t0
        calls = {"answer_model_calls": qe.llm.calls, "judge_calls": getattr(judge, "calls", None)}
    manifest = json.loads((index / "manifest.json").read_text()) if (index / "manifest.json").exists() else {}
    summary = manifest.get("summary") or {}
    return {
        "corpus": name,
        "index": str(index),
        "build": {
            "counts": info["counts"],
            "levels": info["levels"],
            "fallback_reports": info["fallback_reports"],
            "llm": (manifest.get("config") or {}).get("llm"),
            "max_cluster_size": ((manifest.get("config") or {}).get("communities") or {}).get("max_cluster_size"),
            "extractor": (info["models"]["extractor"] or {}).get("name"),
            "seconds_per_stage": summary.get("seconds_per_stage"),
        },
        "search_config": "library defaults"
        if args.library_defaults
        else {
            "dynamic_map_calls": args.map_calls,
            "map_max_tokens": args.map_max_tokens,
            "answer_max_tokens": args.answer_max_tokens,
            "context_tokens": args.context_tokens,
        },
        "seconds": round(seconds, 1),
        # Judges tend to prefer the longer answer: the lengths, to read the win rates against.
        "mean_answer_words": {result.a: _mean_words(result.answers_a), result.b: _mean_words(result.answers_b)},
        **calls,
        "evaluation": result.to_dict(),
        "table": result.format(),
    }


def _mean_words(answers) -> float:
    return round(sum(len(x.text.split()) for x in answers) / max(len(answers), 1), 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--index", action="append", required=True, metavar="NAME=DIR", help="a built index, repeatable")
    p.add_argument("--judge", help="GGUF that writes questions and judges (default: each index's LLM)")
    p.add_argument("--questions", type=int, default=6)
    p.add_argument("--source", choices=["personas", "reports"], default="personas")
    p.add_argument("--a", default="global")
    p.add_argument("--b", default="naive")
    p.add_argument("--n-ctx", type=int, default=4096)
    p.add_argument("--answer-tokens", type=int, default=700, help="answers are cut to this for the judge")
    p.add_argument("--map-calls", type=int, default=2, help="GlobalConfig.dynamic_map_calls")
    p.add_argument("--map-max-tokens", type=int, default=250)
    p.add_argument("--answer-max-tokens", type=int, default=300)
    p.add_argument("--context-tokens", type=int, default=1500)
    p.add_argument("--library-defaults", action="store_true", help="the library's search settings instead")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--cache-dir", type=Path, help="keep model calls here, so a rerun resumes (default: none)")
    p.add_argument("--out-dir", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_logs()
    machine = machine_info()
    for spec in args.index:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not folder:
            p.error(f"--index {spec!r}: write NAME=DIR, e.g. obama=/tmp/idx_obama")
        log.info("evaluating %s (%s)", name, folder)
        data = run_one(name, Path(folder), args)
        data.update(machine=machine, git=git_commit(), command=" ".join(sys.argv))
        out = args.out_dir / f"global_eval_{name}.json"
        dump_json(data, out)
        print(f"== {name} ({data['seconds']}s) -> {out}\n{data['table']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
