"""Compare the headline numbers of two or more benchmark runs: is a rerun the same within noise?

    python -m bench.compare bench/out/run1.json bench/out/run2.json

Prints, for every line of the runs' summaries, each run's numbers and the largest relative
difference from the first run. Quality numbers (recall, F1, visible triples) must be identical
between runs: they involve no timing. Speed ratios vary with the machine's other load.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def numbers(text: str) -> list[float]:
    return [float(x) for x in NUMBER.findall(str(text))]


def compare(runs: list[dict]) -> list[tuple[str, list[str], float | None]]:
    """(summary label, each run's value, largest relative difference from the first run)."""
    labels = list(dict.fromkeys(k for r in runs for k in r.get("summary", {})))
    rows = []
    for label in labels:
        values = [r.get("summary", {}).get(label, "-") for r in runs]
        base = numbers(values[0])
        spread = None
        for v in values[1:]:
            other = numbers(v)
            if base and len(other) == len(base):
                diffs = [abs(o - b) / abs(b) if b else float(o != b) for b, o in zip(base, other)]
                spread = max([spread or 0.0, *diffs])
        rows.append((label, values, spread))
    return rows


def main(argv: list[str] | None = None) -> int:
    paths = [Path(p) for p in (sys.argv[1:] if argv is None else argv)]
    if len(paths) < 2:
        print("usage: python -m bench.compare RUN1.json RUN2.json [...]", file=sys.stderr)
        return 2
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    print("| | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " | largest difference |")
    print("|---" * (len(runs) + 2) + "|")
    for label, values, spread in compare(runs):
        diff = "-" if spread is None else f"{100 * spread:.1f}%"
        print(f"| {label} | " + " | ".join(str(v) for v in values) + f" | {diff} |")
    print("| seconds in all | " + " | ".join(str(r.get("seconds_total")) for r in runs) + " | |")
    print(
        "| load average at start | " + " | ".join(str(r["machine"].get("load_average_at_start")) for r in runs) + " | |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
