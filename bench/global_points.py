"""Global search with grounded map points against GraphRAG's ranking by the map model's scores.

    python bench/global_points.py --index obama=graphs/obama --index carol=/tmp/carol-idx [--json out.json]

Each index must be built with community reports (the demo's `make demo` writes graphs/obama;
`python -m bench.tree carol` writes a Christmas Carol index). Every question is asked twice
with the same reports, map calls and reduce prompt, through one model-call cache (so the map
calls are made once): "grounded" (the library default, search/grounding.py) and "graphrag"
(GlobalConfig(relevance_weight=0, point_cutoff=0): points ranked by the map model's scores,
score-0 points dropped). Per question and ranking: the answer, how many points the map step
wrote and how many reached the reduce, the model's and the grounded scores of each point with
its source report and that report's query similarity. The settings were chosen on the demo's
question only (the first Obama question); the others were not looked at before.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `python bench/global_points.py` from the root

from bench.common import ROOT, dump_json, git_commit, machine_info, quiet_logs  # noqa: E402

log = logging.getLogger("bench.global_points")

QUESTIONS = {
    "obama": (
        "What are the main themes of Obama's presidency?",  # the demo's question: the settings were chosen on it
        "What were Obama's main policy achievements?",
        "What are the themes of the collection?",
        "What is the boiling point of mercury?",  # about nothing in the article
    ),
    "carol": (
        "How does Scrooge change from the beginning of the story to the end?",
        "Which spirits visit Scrooge, and what does each one show him?",
        "What are the main themes of the story?",
        "What are the themes of the collection?",
        "What is the boiling point of mercury?",
    ),
}
RANKINGS = {"grounded": {}, "graphrag": {"relevance_weight": 0.0, "point_cutoff": 0.0}}


def ask(index: Path, questions, llm_path: Path, cache: Path) -> list[dict]:
    from tiny_graphrag.backends.llm import open_llm
    from tiny_graphrag.config import LLMConfig
    from tiny_graphrag.index.cache import CallCache
    from tiny_graphrag.search.config import GlobalConfig
    from tiny_graphrag.search.engine import QueryEngine
    from tiny_graphrag.search.prompts import NOT_IN_CONTEXT

    # One thread: on 2 shared cores llama.cpp's threads spin against each other (as bench/answers.py).
    llm = open_llm(LLMConfig(model=str(llm_path), n_ctx=4096, n_threads=1), cache=CallCache(cache))
    rows = []
    with QueryEngine(index, llm=llm) as qe:
        for q in questions:
            row: dict = {"question": q}
            for name, overrides in RANKINGS.items():
                t0 = time.perf_counter()
                r = qe.global_search(q, config=GlobalConfig(**overrides))
                d = r.details
                row[name] = {
                    "answer": r.answer,
                    "does_not_say": r.answer.startswith(NOT_IN_CONTEXT[:-1]),
                    "points": len(d.get("points", [])),
                    "points_in_reduce": d.get("points_in_reduce"),
                    "map_calls": d.get("map_chunks"),
                    "seconds": round(time.perf_counter() - t0, 1),
                    "point_scores": [
                        {k: p.get(k) for k in ("model_score", "score", "source_report", "similarity", "relevance")}
                        | {"description": p["description"][:160]}
                        for p in d.get("points", [])
                    ],
                }
                log.info("%s | %s: %s", q, name, r.answer[:200])
            rows.append(row)
    return rows


def summary(rows: list[dict]) -> dict:
    out = {}
    for name in RANKINGS:
        out[name] = {
            "questions": len(rows),
            "does_not_say": sum(r[name]["does_not_say"] for r in rows),
            "reduced": sum(bool(r[name]["points_in_reduce"]) for r in rows),
            "points_in_reduce": sum(r[name]["points_in_reduce"] or 0 for r in rows),
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", action="append", required=True, help="NAME=PATH, NAME one of " + ", ".join(QUESTIONS))
    ap.add_argument("--llm", type=Path, default=ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "out" / "global_points")
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "global-points.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    quiet_logs()
    args.work.mkdir(parents=True, exist_ok=True)
    result: dict = {"llm": args.llm.name, "rankings": RANKINGS, "corpora": {}}
    for spec in args.index:
        name, _, path = spec.partition("=")
        if name not in QUESTIONS or not path:
            ap.error(f"--index wants NAME=PATH with NAME one of {', '.join(QUESTIONS)}, got {spec!r}")
        rows = ask(Path(path), QUESTIONS[name], args.llm, args.work / f"calls-{name}.sqlite")
        result["corpora"][name] = {"index": path, "summary": summary(rows), "questions": rows}
        sys.stdout.write(json.dumps({name: result["corpora"][name]["summary"]}) + "\n")
    result.update(machine=machine_info(), git=git_commit(), command=" ".join(sys.argv))
    dump_json(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
