"""Render a results JSON as the Markdown tables of bench/RESULTS.md.

    python -m bench.report bench/out/results.json > /tmp/tables.md
    python -m bench.report --check bench/out/results.json   # recompute the quality numbers

`--check` recomputes every recall@k (and its interval) from the per-question rankings and every
F1 from the per-document counts stored in the JSON, and exits 1 when one differs from the
stored summary. The prose of RESULTS.md (method, caveats, findings) is written by hand around these tables.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from .__main__ import SECTIONS


def header(r: dict) -> str:
    m = r["machine"]
    git = r.get("git", {})
    lines = [
        f"- date: {r['started']} to {r.get('finished', '?')} ({r.get('seconds_total', '?')} s in all)",
        f"- machine: {m.get('cpu_model')}, {m.get('cpu_count')} cores, {m.get('memory_gib')} GiB; "
        f"{m.get('platform')}; Python {m.get('python')}; torch {m.get('torch')} ({m.get('torch_threads')} threads); "
        f"CUDA: {m.get('cuda')}; load average at start {m.get('load_average_at_start')}",
        "- packages: " + ", ".join(f"{k} {v}" for k, v in (m.get("packages") or {}).items()),
        f"- commit: {git.get('commit')}" + (" (with uncommitted changes)" if git.get("dirty") else ""),
        f"- command: `{r['command']}` (mode: {r['mode']})",
        f"- seconds per section: {r.get('seconds_per_section')}",
    ]
    return "\n".join(lines)


def tables(r: dict) -> str:
    out = []
    for name, module, what in SECTIONS:
        res = r["sections"].get(name)
        if res is None:
            continue
        out.append(f"### {name}: {what}\n")
        if "error" in res:
            out.append(f"FAILED: {res['error']}\n")
            continue
        rows = importlib.import_module(module).table(res)
        out.append("| | |\n|---|---|")
        out += [f"| {k.strip()} | {str(v).replace('|', '/')} |" for k, v in rows]
        out.append("")
    return "\n".join(out)


def recompute(r: dict) -> list[str]:
    """Quality numbers recomputed from the JSON's raw data; the mismatches with the stored ones."""
    from .quality_extraction import prf
    from .retrieval_eval import Question, score

    problems: list[str] = []
    ret = r["sections"].get("quality_retrieval")
    if isinstance(ret, dict) and "per_question" in ret:
        rows = ret["per_question"]
        questions = [Question(q["id"], "", tuple(q["gold"]), "") for q in rows]
        modes = [m for m in ret["results"] if rows and m in rows[0]]
        again = score({m: [q[m] for q in rows] for m in modes}, questions)
        for mode in modes:
            stored = ret["results"][mode]
            for key, value in again[mode].items():
                if stored.get(key) != value:
                    problems.append(f"quality_retrieval {mode} {key}: stored {stored.get(key)}, recomputed {value}")
        for pair, value in again.get("paired_recall@5", {}).items():
            stored = ret["results"].get("paired_recall@5", {}).get(pair)
            if stored is not None and stored != value:
                problems.append(f"quality_retrieval paired recall@5 {pair}: stored {stored}, recomputed {value}")
    ext = r["sections"].get("quality_extraction")
    for name, res in ((ext or {}).get("extractors") or {}).items():
        if not isinstance(res, dict) or "per_document" not in res:
            continue
        for metric, field in (("entity", "mentions"), ("relation", "triples"), ("entity_pair_unlabeled", "pairs")):
            tp, pred, gold = (sum(d[field][i] for d in res["per_document"]) for i in range(3))
            value = prf(tp, pred, gold)["f1"]
            if res[metric]["f1"] != value:
                problems.append(
                    f"quality_extraction {name} {metric} F1: stored {res[metric]['f1']}, recomputed {value}"
                )
    return problems


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in argv
    argv = [a for a in argv if a != "--check"]
    path = Path(argv[0]) if argv else Path("bench/out/results.json")
    r = json.loads(path.read_text(encoding="utf-8"))
    if check:
        problems = recompute(r)
        for p in problems:
            print(p)
        print(
            f"{len(problems)} quality numbers differ from their recomputation"
            if problems
            else "every quality number in the JSON matches its recomputation from the raw data"
        )
        return 1 if problems else 0
    print(header(r))
    print()
    print(tables(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
