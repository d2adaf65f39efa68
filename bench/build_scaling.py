"""Build time per stage and peak memory against corpus size.

Each size is built by `build_index` in a fresh subprocess (so its peak memory is its own), with
the spaCy extractor (en_core_web_sm NER, sentence co-occurrence relations), all-MiniLM-L6-v2
embeddings, alias resolution, hierarchical Leiden, and no LLM reports (on 2 CPU cores reports
cost tens of seconds each; the `llm` section measures their share on a small corpus). Fresh
model-call cache for every build.

Corpora (bench.common.corpus_of_size): the Obama article; + A Christmas Carol + Operation: Dulce;
+ the 994 HotpotQA passages; + the 500 Re-DocRED documents (~271k tokens of real text); beyond
that, copies of the same text with every capitalized word renamed consistently per copy, so new
copies name new entities. Peak memory per stage: Linux's VmHWM, reset at each stage start.

GLiNER+GLiREL cannot index these sizes in reasonable time on 2 cores: their cost is given as the
per-token cost measured by the `extraction` section, multiplied out (fields named `projected_`).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from .common import ROOT, Context, rnd

log = logging.getLogger("bench.build_scaling")


# ---- worker (runs in the subprocess) ---------------------------------------------------------
class _StageMemory(logging.Handler):
    """Peak RSS per build stage, from the build's own "stage X ..." / "stage X done" log lines."""

    START = re.compile(r"^stage (\w+) \.\.\.$")
    DONE = re.compile(r"^stage (\w+) done")

    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        self.peaks: dict[str, float] = {}
        self.overall = 0.0  # the whole process's peak, kept across the per-stage resets

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if self.START.match(msg):
            self.overall = max(self.overall, _vm("VmHWM") or 0.0)
            _reset_hwm()
        elif m := self.DONE.match(msg):
            hwm = _vm("VmHWM")
            if hwm is not None:
                self.peaks[m.group(1)] = hwm
                self.overall = max(self.overall, hwm)

    def peak(self) -> float:
        return max(self.overall, _vm("VmHWM") or 0.0)


def _reset_hwm() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets the peak RSS (VmHWM) to the current RSS
    except OSError:
        pass


def _vm(field: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def worker(tokens: int, work: Path) -> dict[str, Any]:
    from tiny_graphrag.config import BuildConfig
    from tiny_graphrag.indexing.pipeline import build_index

    from .common import corpus_of_size, graph_counts, peak_rss_mb, quiet_logs, spacy_extraction_config, write_corpus

    quiet_logs()
    docs, facts = corpus_of_size(tokens)
    paths = write_corpus(docs, work / "docs")
    handler = _StageMemory()
    build_log = logging.getLogger("tiny_graphrag.indexing.pipeline")
    build_log.setLevel(logging.INFO)
    build_log.addHandler(handler)
    rss_before = _vm("VmRSS")
    cfg = BuildConfig(extraction=spacy_extraction_config(), reports=False, cache_dir=str(work / "cache"))
    result = build_index([str(p) for p in paths], work / "index", config=cfg, progress=False)
    s = result.summary
    return {
        **facts,
        **graph_counts(s),
        "merged_aliases": s.merged_aliases,
        "seconds_per_stage": s.seconds_per_stage,
        "seconds_total": rnd(sum(s.seconds_per_stage.values()), 2),
        # VmHWM: this process's own peak (getrusage's maxrss would include the parent's size before exec)
        "peak_rss_mb": handler.peak() or peak_rss_mb(),
        "rss_before_build_mb": rss_before,
        "peak_rss_mb_per_stage": handler.peaks,
        "index_mb": rnd(sum(f.stat().st_size for f in (work / "index").rglob("*") if f.is_file()) / 2**20, 1),
    }


# ---- the section ------------------------------------------------------------------------------
def run_size(tokens: int, work: Path) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    out = work / "result.json"
    cmd = [
        sys.executable,
        "-m",
        "bench.build_scaling",
        "--worker",
        "--tokens",
        str(tokens),
        "--work",
        str(work),
        "--json",
        str(out),
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"build of {tokens} tokens failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(out.read_text(encoding="utf-8"))


def exponents(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """Growth exponent b of seconds ~ tokens^b between the smallest and largest size, per stage."""
    if len(rows) < 2:
        return {}
    a, z = rows[0], rows[-1]
    span = math.log(z["tokens"] / a["tokens"])
    out: dict[str, float | None] = {}
    for stage in list(z["seconds_per_stage"]) + ["total"]:
        t0 = a["seconds_total"] if stage == "total" else a["seconds_per_stage"].get(stage)
        t1 = z["seconds_total"] if stage == "total" else z["seconds_per_stage"].get(stage)
        out[stage] = rnd(math.log(t1 / t0) / span, 2) if t0 and t1 and t0 > 0.05 else None
    return out


def run(ctx: Context) -> dict[str, Any]:
    rows = []
    for tokens in ctx.mode.build_sizes:
        log.info("building a %d-token corpus", tokens)
        row = run_size(tokens, ctx.work / f"build-{tokens}")
        rows.append(row)
        log.info("%d tokens: %.1f s, peak %.0f MiB", row["tokens"], row["seconds_total"], row["peak_rss_mb"])
    per_token = ctx.shared.get("extraction_seconds_per_token")
    for row in rows:
        row["tokens_per_s"] = rnd(row["tokens"] / row["seconds_total"], 1)
        if per_token:
            row["projected_gliner_glirel_extract_hours"] = rnd(per_token * row["tokens"] / 3600, 2)
    return {
        "extractor": "spacy en_core_web_sm + sentence co-occurrence relations; no LLM reports",
        "sizes": rows,
        "growth_exponent_per_stage": exponents(rows),
        "gliner_glirel_seconds_per_token_measured": rnd(per_token, 4) if per_token else None,
    }


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for row in r["sizes"]:
        stages = ", ".join(f"{k} {v:.1f}" for k, v in row["seconds_per_stage"].items())
        proj = (
            f"; GLiNER+GLiREL extract would take ~{row['projected_gliner_glirel_extract_hours']} h (projected)"
            if "projected_gliner_glirel_extract_hours" in row
            else ""
        )
        rows.append(
            (
                f"{row['tokens']} tokens ({row['documents']} docs, {row['chunks']} chunks)",
                f"{row['seconds_total']:.1f} s = {row['tokens_per_s']} tok/s, peak {row['peak_rss_mb']:.0f} MiB, "
                f"{row['entities']} entities, {row['relations']} relations [{stages}]{proj}",
            )
        )
    g = r["growth_exponent_per_stage"]
    if g:
        rows.append(("growth exponent (time ~ tokens^b)", ", ".join(f"{k} {v}" for k, v in g.items() if v is not None)))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--tokens", type=int, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--json", type=Path, required=True)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    result = worker(args.tokens, args.work)
    args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
