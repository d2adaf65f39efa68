"""Global answers and the key facts they keep: the small reader's themes against GraphRAG's map-reduce.

    python -m bench.global_answers --split test --json out.json
    python -m bench.global_answers --split tune --set global_.themes=6      # choose settings here

Questions: bench/data/global_questions.json (12 per corpus, 4-7 key facts each, written from the texts
before any run; "tune" and "test" alternate). Indexes as the demo builds them (bench/global_select.py's
docstring has the commands): graphs/obama and graphs/carol.

Two ways per question, one reader (Qwen2.5-Coder-0.5B), one invocation:
- small: the library's default for this model (SearchConfig reader "auto" -> "small"): the themes nearest
  the question, each quoted in its text's own sentences (search/global_answer.py); no model call;
- large: SearchConfig(reader="large"), GraphRAG's map-reduce (dynamic selection, map calls, one reduce call).
Key facts (a fact is present when one of its strings occurs as whole words) are counted in what each
step read: the map input (large), the writing step's input (large: the reduce's key points; small: the
themes' candidate sentences, `result.context`) and the answer; with 95% bootstrap intervals over
questions. Calls and seconds per question (the whole search) on our 2 cores.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .answer_eval import bootstrap, parse_settings
from .common import dump_json
from .global_select import DEMO_QUESTION, INDEXES, QUESTIONS, recall

log = logging.getLogger("bench.global_answers")
WAYS = ("small", "large")


def ask(engines: dict, q: dict, way: str) -> dict[str, Any]:
    qe = engines[way][q["corpus"]]
    t0 = time.perf_counter()
    res = qe.global_search(q["question"])
    seconds = time.perf_counter() - t0
    d = res.details
    facts = q.get("facts") or []
    if way == "large":
        inputs = {"map_input": "\n".join(d.get("map_contexts", [])), "writer_input": d.get("reduce_context", "")}
    else:
        inputs = {"writer_input": res.context}
    out: dict[str, Any] = {
        "answer": res.answer,
        "calls": res.llm_calls,
        "seconds": round(seconds, 2),
        "prompt_tokens": res.prompt_tokens,
        "reader": d.get("reader"),
    }
    if facts:
        out.update({f"{k}_facts": recall(facts, text) for k, text in inputs.items()})
        out["answer_facts"] = recall(facts, res.answer)
        out["facts_in_answer"] = [f["fact"] for f in facts if recall([f], res.answer)]
    return out


def summarize(rows: list[dict], ways: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for w in ways:
        got = [r[w] for r in rows]
        s: dict[str, Any] = {
            "n": len(got),
            "calls_mean": round(statistics.mean(g["calls"] for g in got), 2),
            "calls_max": max(g["calls"] for g in got),
            "seconds_median": round(statistics.median(g["seconds"] for g in got), 2),
        }
        for key in ("map_input_facts", "writer_input_facts", "answer_facts"):
            if key in got[0]:
                s[key] = bootstrap([g[key] for g in got])
        # of the facts the writing step was given, the share its answer kept (questions with any)
        kept = [g["answer_facts"] / g["writer_input_facts"] for g in got if g.get("writer_input_facts")]
        s["answer_keeps_of_writer_input"] = round(100 * statistics.mean(kept), 1) if kept else None
        out[w] = s
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from tiny_graphrag.search.engine import QueryEngine

    from .answer_eval import open_reader

    p = argparse.ArgumentParser(prog="python -m bench.global_answers", description=__doc__.split("\n")[0])
    p.add_argument("--split", choices=("tune", "test"), default="test")
    p.add_argument("--ways", default=",".join(WAYS))
    p.add_argument("--set", action="append", default=[], help="a SearchConfig change, e.g. global_.themes=6")
    p.add_argument("--cache", type=Path, default=None)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    config = parse_settings(args.set)
    data = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    questions = [q for q in data["questions"] if q["split"] == args.split]
    questions.append({"id": "demo", "corpus": DEMO_QUESTION[0], "question": DEMO_QUESTION[1], "facts": []})
    llm = open_reader(args.cache)
    ways = args.ways.split(",")
    engines = {
        w: {
            name: QueryEngine(
                path, llm=llm, config=config if w == "small" else parse_settings([*args.set, "reader=large"])
            )
            for name, path in INDEXES.items()
        }
        for w in ways
    }
    report: dict[str, Any] = {"split": args.split, "settings": args.set, "load_start": os.getloadavg(), "rows": []}
    for q in questions:
        row = {"id": q["id"], "question": q["question"], **{w: ask(engines, q, w) for w in ways}}
        report["rows"].append(row)
        log.warning("%s %s", q["id"], {w: row[w].get("answer_facts") for w in ways})
    scored = [r for r in report["rows"] if r["id"] != "demo"]
    report["summary"] = summarize(scored, ways)
    report["load_end"] = os.getloadavg()
    print(json.dumps(report["summary"], indent=1))
    demo = report["rows"][-1]
    for w in ways:
        print(f"demo ({w}):\n{demo[w]['answer']}\n")
    if args.json:
        dump_json(report, args.json)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
