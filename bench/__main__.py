"""`python -m bench [--quick | --full] [--out bench/out/results.json] [--only SECTION ...]`

Runs the benchmark sections in order, prints one table per section and a summary of the ratios,
and writes everything to one JSON file (numbers, settings, machine, commit, the command). A
section that fails is recorded with its error and the others still run; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import shlex
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from .common import MODES, ROOT, Context, dump_json, git_commit, machine_info, peak_rss_mb, quiet_logs

# (name, module, what it measures). Order matters: later sections reuse indexes built earlier.
SECTIONS: list[tuple[str, str, str]] = [
    (
        "extraction",
        "bench.extraction",
        "extraction throughput: ours (batched) vs the seed (one 200-char chunk per call)",
    ),
    (
        "quantization",
        "bench.quantization",
        "int8 dynamic quantization vs fp32: prediction agreement (trained tiny GLiNER)",
    ),
    ("ray", "bench.ray_scaling", "extraction on Ray Data actors: 1 vs 2 actors vs in process"),
    ("embedding", "bench.embedding", "embedding throughput: batched vs one call per chunk"),
    ("llm", "bench.llm_throughput", "LLM prompt/generation tokens/s and its share of build time"),
    ("build_scaling", "bench.build_scaling", "build time per stage and peak memory vs corpus size"),
    ("global_calls", "bench.global_calls", "global search: LLM calls and prompt tokens vs one call per community"),
    ("local_latency", "bench.local_latency", "local search context-building latency (no LLM)"),
    ("quality_retrieval", "bench.quality_retrieval", "passage recall@k on hotpotqa100"),
    ("quality_extraction", "bench.quality_extraction", "entity and relation micro-F1 on Re-DocRED dev"),
    ("documents", "bench.documents", "document readers: units per second per format, text recovered vs known"),
    ("chunk_context", "bench.chunk_context", "share of Re-DocRED gold triples whose head and tail share a chunk"),
    (
        "answers",
        "bench.answers",
        "answer EM/F1 on hotpotqa100: closed-book, oracle, naive, local, global (Qwen 0.5B reader)",
    ),
]
NAMES = [s[0] for s in SECTIONS]
# Too slow for the default run's 15 minutes on 2 CPU cores: run with --full, or by name with --only.
FULL_ONLY = {"answers", "quantization", "ray"}  # the last two: issue 16, by name with --only


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="tiny models and samples: a smoke run of ~2 minutes")
    size.add_argument(
        "--full", action="store_true", help="larger samples and the build series up to ~1M tokens (~1 hour)"
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "results.json", help="the JSON to write")
    ap.add_argument("--only", nargs="+", choices=NAMES, metavar="SECTION", help=f"run only these: {', '.join(NAMES)}")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: next to --out, emptied first)")
    ap.add_argument("-v", "--verbose", action="store_true")
    return ap.parse_args(argv)


def format_table(title: str, rows: list[tuple[str, str]]) -> str:
    width = max([len(k) for k, _ in rows] + [10])
    lines = [f"== {title} ==", *(f"  {k:<{width}}  {v}" for k, v in rows)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    quiet_logs()
    mode = MODES["quick" if args.quick else "full" if args.full else "default"]
    out = args.out.resolve()
    work = (args.work or out.parent / f"work-{mode.name}").resolve()
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ctx = Context(mode=mode, work=work, out_json=out)
    wanted = args.only or [n for n in NAMES if n not in FULL_ONLY or mode.name == "full"]

    command = "python -m bench" + "".join(f" {shlex.quote(a)}" for a in (argv if argv is not None else sys.argv[1:]))
    results: dict[str, Any] = {
        "format": 1,
        "mode": mode.name,
        "command": command,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git": git_commit(),
        "machine": machine_info(),
        "settings": mode.__dict__,
        "sections": {},
        "seconds_per_section": {},
    }
    load, cores = _load(), os.cpu_count() or 1
    if load and load[0] > 0.75 * cores:
        warning = (
            f"the machine is busy (load average {load[0]} on {cores} cores) before the run: other processes "
            "compete for the cores, and timings (the seed's many small model calls most of all) will be slower "
            "and noisier than on an idle machine"
        )
        results["busy_machine_warning"] = warning
        print(f"WARNING: {warning}", file=sys.stderr, flush=True)
    failed = []
    t_all = time.perf_counter()
    for name, module_name, what in SECTIONS:
        if name not in wanted:
            continue
        print(f"\n[{name}] {what} ...", flush=True)
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(module_name)
            result = module.run(ctx)
            results["sections"][name] = result
            print(format_table(name, module.table(result)), flush=True)
        except Exception as exc:  # noqa: BLE001 - record and go on with the other sections
            failed.append(name)
            results["sections"][name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
            print(f"== {name} == FAILED: {type(exc).__name__}: {exc}", flush=True)
            logging.getLogger("bench").debug("traceback", exc_info=True)
        results["seconds_per_section"][name] = round(time.perf_counter() - t0, 1)
        results.setdefault("load_average_after_section", {})[name] = _load()
        dump_json(results, out)  # after every section: a crash later keeps what was measured
    results["seconds_total"] = round(time.perf_counter() - t_all, 1)
    results["peak_rss_mb_main_process"] = peak_rss_mb()
    results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    summary = summary_rows(results["sections"])
    results["summary"] = dict(summary)
    dump_json(results, out)
    print("\n" + format_table(f"summary ({mode.name} mode, {results['seconds_total']} s)", summary))
    print(f"\nwrote {out}")
    if failed:
        print(f"sections that failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def summary_rows(sections: dict[str, Any]) -> list[tuple[str, str]]:
    """The headline ratios, one line each."""
    rows: list[tuple[str, str]] = []

    def get(*path: str) -> Any:
        node: Any = sections
        for p in path:
            if not isinstance(node, dict) or p not in node:
                return None
            node = node[p]
        return node

    def add(label: str, value: Any, suffix: str = "x") -> None:
        if value is not None:
            rows.append((label, f"{value}{suffix}"))

    add("extraction tokens/s, ours / seed", get("extraction", "speedup_tokens_per_s"))
    add("embedding texts/s, batched / one call per chunk", get("embedding", "speedup"))
    add(
        "embedding, ours (batched, 256-word chunks) / seed (200-char chunks, one call each)",
        get("embedding", "speedup_vs_seed_chunking"),
    )
    add("LLM share of build time (Obama slice, real reports)", get("llm", "llm_share_of_build"), "")
    add("global search LLM calls, seed / ours (default level)", get("global_calls", "calls_ratio_seed_over_ours"))
    add(
        "global search prompt tokens, seed / ours (default level)",
        get("global_calls", "prompt_tokens_ratio_seed_over_ours"),
    )
    add("global map calls saved by dynamic selection", get("global_calls", "dynamic", "map_calls_saved_mean"), "")
    add("local context p50 / p95 ms (Obama)", _pair(get("local_latency", "obama", "total_ms")), "")
    add("local context p50 / p95 ms (synthetic graph)", _pair(get("local_latency", "synthetic", "total_ms")), "")
    add(
        "local context without query embedding p50 / p95 ms (Obama)",
        _pair(get("local_latency", "obama", "without_embedding_ms")),
        "",
    )
    add(
        "local context without query embedding p50 / p95 ms (synthetic graph)",
        _pair(get("local_latency", "synthetic", "without_embedding_ms")),
        "",
    )
    for mode in ("dense", "bm25", "hybrid", "local"):
        r = get("quality_retrieval", "results", mode)
        if r:
            rows.append((f"hotpotqa100 R@2/5/10 {mode}", f"{r['recall@2']}/{r['recall@5']}/{r['recall@10']}"))
    for mode, r in (get("answers", "results", "modes") or {}).items():
        rows.append((f"hotpotqa answers EM / F1 ({mode})", f"{r['em']['mean']} / {r['f1']['mean']}"))
    visible = get("chunk_context", "share_of_triples_visible_in_one_chunk") or {}
    if visible:
        rows.append(
            (
                "Re-DocRED triples visible in one chunk, seed 200 chars / ours 256 words",
                f"{visible.get('seed-200-chars')}% / {visible.get('sentences-256-tokens')}%",
            )
        )
    for ex, r in (get("quality_extraction", "extractors") or {}).items():
        if isinstance(r, dict) and "entity" in r:
            rows.append((f"Re-DocRED F1 entity / relation ({ex})", f"{r['entity']['f1']} / {r['relation']['f1']}"))
    return rows


def _load() -> list[float] | None:
    """1/5/15-minute load averages: other processes' CPU use makes timings noisy."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _pair(d: Any) -> str | None:
    if not isinstance(d, dict):
        return None
    return f"{d.get('p50')} / {d.get('p95')}"


if __name__ == "__main__":
    sys.exit(main())
