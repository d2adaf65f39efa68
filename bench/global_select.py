"""Global search with dynamic community selection against the level way and the seed's way (issue 32).

    python -m bench.global_select                  # tokens, calls, key facts in the map input (no generation)
    python -m bench.global_select --answers        # + answers on the test split: seconds, key facts, judge

Questions: bench/data/global_questions.json, written from the two texts before any run: 12 global
questions per corpus, each with the key facts a good answer contains (a fact is present in a text
when any of its strings occurs there as whole words, case-insensitive), half "tune", half "test".
Settings are chosen on "tune" (`--grid`: the map budget's share of a level and the relevance cutoff, by key facts
in the map input under the token goal) and reported on "test".

Indexes (built before, as the demo builds its index: spaCy, Qwen2.5-Coder-0.5B reports of
communities of 5+ entities, 300-token reports from 1,200 tokens of context):
    tiny-graphrag build examples/data/barack_obama.txt --out graphs/obama ...     (make demo)
    tiny-graphrag build ../shared/data/corpora/a_christmas_carol.txt --out graphs/carol --extractor spacy \\
        --llm qwen2.5-coder-0.5b-instruct-q4_k_m.gguf --report-min-size 5 --report-max-tokens 300 \\
        --report-context-tokens 1200 --max-cluster-size 30

Three ways per question, on one index, one invocation:
- seed: Tiny GraphRAG's one call per community report (the reports of the level the level way
  maps) and one combine call; counted, never run.
- level: `GlobalConfig(**EVERY_REPORT)` (bench/global_calls.py), every report in reach (the
  library's level way, which this compared against, is removed).
- dynamic: the library's default (search/selection.py).
Map prompt tokens are counted exactly as llama.cpp runs them (the GGUF's tokenizer and chat template).
With --answers, level and dynamic answer each test question (streamed: seconds to the first token
and to the whole answer), key facts are counted in the reduce's input and in the answer, and the
model judges dynamic against level head to head (the paper's four criteria, both orders).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from .answers import mean_ci, paired
from .common import ROOT, dump_json, git_commit, machine_info, quiet_logs
from .global_calls import EVERY_REPORT, seed_messages

log = logging.getLogger("bench.global_select")

QUESTIONS = ROOT / "bench" / "data" / "global_questions.json"
INDEXES = {"barack_obama": ROOT / "graphs" / "obama", "a_christmas_carol": ROOT / "graphs" / "carol"}
DEMO_QUESTION = ("barack_obama", "What are the main themes of Obama's presidency?")
TOKEN_GOAL, CALL_GOAL = 0.3, 6  # issue 32: at most 0.3x the seed's map prompt tokens, at most 6 calls
# dynamic_map_calls stays 3: on these indexes a whole level is 1-2 map calls, so the share binds.
GRID = [(share, cutoff) for share in (0.15, 0.25, 0.3, 0.35, 0.5) for cutoff in (0.0, 0.2, 0.4)]


def present(fact: dict, text: str) -> bool:
    return any(re.search(rf"\b{re.escape(s)}\b", text, re.IGNORECASE) for s in fact["any"])


def recall(facts: list[dict], text: str) -> float:
    return sum(present(f, text) for f in facts) / len(facts)


def differences(answers: list[dict]) -> dict[str, Any]:
    """Dynamic minus level per question (percent points), with 95% bootstrap intervals."""
    return {
        key: paired([a["dynamic"][key] for a in answers], [a["level"][key] for a in answers])
        for key in ("reduce_input_facts", "answer_facts")
    }


def map_cost(llm, result, question: str) -> dict[str, Any]:
    """Calls and exact map prompt tokens of one only_context global result."""
    from tiny_graphrag.search.prompts import map_messages

    d = result.details
    tokens = sum(len(llm.prompt_token_ids(map_messages(t, question))) for t in d["map_contexts"])
    return {
        "map_calls": d["map_chunks"],
        "calls": d["map_chunks"] + 1,
        "map_prompt_tokens": tokens,
        "reports_mapped": d["reports_mapped"],
        "level": d["level"],
    }


def seed_cost(llm, qe, level: int, question: str) -> dict[str, Any]:
    reports = [r for _, r in qe.index.globals.at_level(level)]
    tokens = sum(len(llm.prompt_token_ids(seed_messages(r.text(), question))) for r in reports)
    return {"map_calls": len(reports), "calls": len(reports) + 1, "map_prompt_tokens": tokens}


def contexts(engines: dict, llm, q: dict, configs: dict) -> dict[str, Any]:
    """Every way's cost and key facts in its map input, no generation."""
    qe = engines[q["corpus"]]
    row: dict[str, Any] = {"id": q["id"], "question": q["question"]}
    for name, cfg in configs.items():
        r = qe.global_search(q["question"], only_context=True, config=cfg)
        row[name] = {
            **map_cost(llm, r, q["question"]),
            "map_input_facts": recall(q["facts"], r.context) if q["facts"] else None,
        }
    row["seed"] = seed_cost(llm, qe, row["level"]["level"], q["question"])
    for name in configs:
        row[name]["token_ratio_vs_seed"] = round(row[name]["map_prompt_tokens"] / row["seed"]["map_prompt_tokens"], 3)
    return row


def answer(qe, q: dict, cfg) -> dict[str, Any]:
    t0 = time.perf_counter()
    stream = qe.global_search(q["question"], config=cfg, stream=True)
    first = None
    for piece in stream:
        if first is None and piece:
            first = time.perf_counter() - t0
    res = stream.result
    total = time.perf_counter() - t0
    d = res.details
    facts = q["facts"]
    return {
        "answer": res.answer,
        "seconds_first_token": round(first or total, 2),
        "seconds": round(total, 2),
        "calls": res.llm_calls,
        "prompt_tokens": sum(u.prompt_tokens for u in res.usage.values()),
        "map_prompt_tokens": res.usage["map"].prompt_tokens if "map" in res.usage else 0,
        "reduce_input_facts": recall(facts, d.get("reduce_context", "")) if facts else None,
        "answer_facts": recall(facts, res.answer) if facts else None,
        "notes": list(res.notes),
    }


def summarize(rows: list[dict], ways: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for w in ways:
        got = [r[w] for r in rows if w in r]
        if not got:
            continue
        s: dict[str, Any] = {"n": len(got)}
        for key in ("calls", "map_prompt_tokens", "token_ratio_vs_seed", "seconds_first_token", "seconds"):
            vals = [g[key] for g in got if g.get(key) is not None]
            if vals:
                s[f"{key}_mean"] = round(float(np.mean(vals)), 3)
                s[f"{key}_max"] = max(vals)
        for key in ("map_input_facts", "reduce_input_facts", "answer_facts"):
            vals = [g[key] for g in got if g.get(key) is not None]
            if vals:
                s[key] = mean_ci(vals)
        out[w] = s
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--grid", action="store_true", help="choose dynamic_map_calls and dynamic_cutoff on the tune split")
    p.add_argument("--answers", action="store_true", help="answer the test split with level and dynamic (LLM)")
    p.add_argument("--judge", action="store_true", help="with --answers: judge dynamic against level head to head")
    p.add_argument("--limit", type=int, default=None, help="at most this many test questions per corpus")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "global-select.json")
    args = p.parse_args(argv)
    quiet_logs()
    from tiny_graphrag.search.config import GlobalConfig, SearchConfig
    from tiny_graphrag.search.engine import QueryEngine

    data = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    questions = data["questions"]
    missing = [f"{c}: {p}" for c, p in INDEXES.items() if not (p / "manifest.json").exists()]
    if missing:
        raise SystemExit(f"build these indexes first (see this module's docstring): {'; '.join(missing)}")
    large = SearchConfig(reader="large")  # map-reduce, the large reader's path
    engines = {c: QueryEngine(p, config=large) for c, p in INDEXES.items()}
    llm = engines["barack_obama"].llm  # the index's LLM (Qwen2.5-Coder-0.5B): exact counts, answers
    for c, qe in engines.items():
        if c != "barack_obama":
            engines[c] = QueryEngine(INDEXES[c], llm=llm.backend, embedder=qe.embedder, config=large)
    backend = llm.backend
    default = GlobalConfig()
    out: dict[str, Any] = {
        "commit": git_commit(),
        "machine": machine_info(),
        "questions": str(QUESTIONS.relative_to(ROOT)),
    }
    out["indexes"] = {
        c: {"path": str(p), "reports": len(engines[c].index.globals.reports), "levels": engines[c].index.globals.levels}
        for c, p in INDEXES.items()
    }

    if args.grid:
        tune = [q for q in questions if q["split"] == "tune"]
        grid = []
        for share, cutoff in GRID:
            cfg = dataclasses.replace(default, dynamic_share=share, dynamic_cutoff=cutoff)
            rows = [
                contexts(engines, backend, q, {"level": dataclasses.replace(default, **EVERY_REPORT), "dynamic": cfg})
                for q in tune
            ]
            s = summarize(rows, ["level", "dynamic"])
            grid.append({"dynamic_share": share, "dynamic_cutoff": cutoff, **s})
            log.warning(
                "grid share=%.2f cutoff=%.2f: facts in map input %s, token ratio %.3f (max %.3f)",
                share,
                cutoff,
                s["dynamic"]["map_input_facts"],
                s["dynamic"]["token_ratio_vs_seed_mean"],
                s["dynamic"]["token_ratio_vs_seed_max"],
            )
        out["grid"] = grid
        out["level_on_tune"] = grid[0]["level"]

    cfg_level = dataclasses.replace(default, **EVERY_REPORT)
    test = [q for q in questions if q["split"] == "test"]
    if args.limit:
        test = [q for c in INDEXES for q in [q for q in test if q["corpus"] == c][: args.limit]]
    demo = {"id": "demo", "corpus": DEMO_QUESTION[0], "question": DEMO_QUESTION[1], "facts": []}
    rows = [contexts(engines, backend, q, {"level": cfg_level, "dynamic": default}) for q in [demo, *test]]
    out["settings"] = {"dynamic": dataclasses.asdict(default)}
    out["contexts"] = rows
    out["contexts_summary"] = {
        c: summarize([r for r, q in zip(rows[1:], test) if q["corpus"] == c], ["seed", "level", "dynamic"])
        for c in INDEXES
    }
    out["contexts_summary"]["all"] = summarize(rows[1:], ["seed", "level", "dynamic"])
    out["demo"] = rows[0]

    if args.answers:
        # One engine per corpus and way, each with its own call cache: no way replays another's calls.
        ways = {
            (c, name): QueryEngine(
                INDEXES[c], llm=backend, embedder=engines[c].embedder, config=SearchConfig(global_=cfg, reader="large")
            )
            for c in INDEXES
            for name, cfg in (("level", cfg_level), ("dynamic", default))
        }
        answers = []
        for q in [demo, *test]:
            row = {"id": q["id"], "question": q["question"]}
            for name, cfg in (("level", cfg_level), ("dynamic", default)):
                row[name] = answer(ways[q["corpus"], name], q, cfg)
                log.warning(
                    "%s %s: %.1fs, %d calls, facts %s",
                    q["id"],
                    name,
                    row[name]["seconds"],
                    row[name]["calls"],
                    row[name]["answer_facts"],
                )
            answers.append(row)
        out["answers"] = answers
        out["answers_summary"] = {
            c: summarize([a for a, q in zip(answers[1:], test) if q["corpus"] == c], ["level", "dynamic"])
            for c in INDEXES
        }
        out["answers_summary"]["all"] = summarize(answers[1:], ["level", "dynamic"])
        out["answers_summary"]["dynamic_minus_level"] = differences(answers[1:])
        if args.judge:
            from tiny_graphrag.evaluation.head_to_head import Answer, judge
            from tiny_graphrag.evaluation.questions import Question
            from tiny_graphrag.evaluation.win_rates import win_rates

            qs = [Question(q["question"]) for q in test]
            a = [
                Answer("dynamic", q["question"], r["dynamic"]["answer"], r["dynamic"]["seconds"], r["dynamic"]["calls"])
                for q, r in zip(test, answers[1:])
            ]
            b = [
                Answer("level", q["question"], r["level"]["answer"], r["level"]["seconds"], r["level"]["calls"])
                for q, r in zip(test, answers[1:])
            ]
            verdicts = judge(llm, qs, a, b)
            out["judge"] = {
                "a": "dynamic",
                "b": "level",
                "model": "the index's LLM (Qwen2.5-Coder-0.5B)",
                "win_rates": [dataclasses.asdict(w) for w in win_rates(verdicts)],
                "verdicts": [dataclasses.asdict(v) for v in verdicts],
            }
    dump_json(out, args.out)
    print(
        json.dumps(
            {k: out[k] for k in ("demo", "contexts_summary") if k in out}
            | ({"answers_summary": out["answers_summary"]} if "answers_summary" in out else {}),
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
