"""Render a results JSON as the Markdown tables of bench/RESULTS.md.

    python -m bench.report bench/out/results.json > /tmp/tables.md

The prose of RESULTS.md (method, caveats, findings) is written by hand around these tables.
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else Path("bench/out/results.json")
    r = json.loads(path.read_text(encoding="utf-8"))
    print(header(r))
    print()
    print(tables(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
