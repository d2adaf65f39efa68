"""LLM throughput of the GGUF in use and the share of build time spent in it.

The GGUF is Gemma 3 270M Q4_K_M (the offline model from PyPI; the library's default for real use,
Llama 3.2 3B, is not obtainable offline). Measured with llama-cpp-python on this machine:
- prompt processing: a prompt of N tokens, 1 token generated, KV cache reset before each run;
- free generation: tokens per second after the prompt (end-of-text suppressed so it runs to N);
- report generation as the build does it: the build's own JSON-schema-constrained report calls,
  completion tokens per second end to end (prompt included).
The share of build time: `build_index` on the first paragraphs of the Obama article with the
spaCy extractor and real reports (fresh cache): seconds of the `reports` stage over all stages.
That index is kept for the global-search section (its reports are real model output).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from .common import (
    Context,
    gemma_config,
    gemma_path,
    graph_counts,
    obama_slice,
    rnd,
    spacy_extraction_config,
    stopwatch,
)

log = logging.getLogger("bench.llm")


def _prompt_text(llama, n_tokens: int) -> list[int]:
    from .common import obama_text

    toks = llama.tokenize(obama_text().encode("utf-8"), add_bos=True, special=False)
    while len(toks) < n_tokens:
        toks = toks + toks[1:]
    return toks[:n_tokens]


def raw_throughput(llm, prompt_tokens: int, gen_tokens: int) -> dict[str, Any]:
    llama = llm.llama  # the loaded llama_cpp.Llama
    prompt = _prompt_text(llama, prompt_tokens)
    eos = llama.token_eos()
    # warm-up
    llama.reset()
    llama.create_completion(prompt[:32], max_tokens=1, temperature=0.0)
    best_pp = float("inf")
    for _ in range(2):
        llama.reset()
        with stopwatch() as t:
            llama.create_completion(prompt, max_tokens=1, temperature=0.0)
        best_pp = min(best_pp, t["s"])
    # generation: time from the first streamed token to the last (prompt processing excluded)
    llama.reset()
    stamps = []
    for _ in llama.create_completion(
        prompt[:16], max_tokens=gen_tokens, temperature=0.0, logit_bias={eos: -1e9}, stream=True
    ):
        stamps.append(time.perf_counter())
    n_gen = len(stamps)
    gen_s = stamps[-1] - stamps[0] if n_gen > 1 else float("nan")
    return {
        "prompt_tokens": len(prompt),
        "prompt_seconds": rnd(best_pp),
        "prompt_tokens_per_s": rnd(len(prompt) / best_pp, 1),
        "generated_tokens": n_gen,
        "generation_seconds": rnd(gen_s),
        "generation_tokens_per_s": rnd((n_gen - 1) / gen_s, 1) if n_gen > 1 and gen_s > 0 else None,
    }


class _Recorder:
    """Wraps the LLM the build uses and records every `complete` call (tokens, seconds)."""

    def __init__(self, llm) -> None:
        self._llm = llm
        self.records: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def complete(self, messages, **kwargs):
        with stopwatch() as t:
            out = self._llm.complete(messages, **kwargs)
        self.records.append(
            {
                "prompt_tokens": out.prompt_tokens,
                "completion_tokens": out.completion_tokens,
                "seconds": round(t["s"], 3),
                "finish_reason": out.finish_reason,
                "cached": out.cached,
                "constrained": kwargs.get("schema") is not None,
            }
        )
        return out


def llm_share(ctx: Context, n_tokens: int) -> dict[str, Any]:
    """A real build (spaCy extractor, Gemma reports) of an Obama slice; seconds per stage."""
    from tiny_graphrag.config import BuildConfig
    from tiny_graphrag.indexing.pipeline import build_index

    text = obama_slice(n_tokens)
    folder = ctx.work / "obama-slice"
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "obama_slice.txt"
    src.write_text(text, encoding="utf-8")
    cfg = BuildConfig(extraction=spacy_extraction_config(), llm=gemma_config(), cache_dir=str(folder / "cache"))
    from tiny_graphrag.backends.llm import open_llm
    from tiny_graphrag.index.cache import CallCache

    llm = _Recorder(open_llm(cfg.llm, cache=CallCache(None)))  # fresh in-memory cache: every call runs
    with stopwatch() as t:
        result = build_index([str(src)], folder / "index", config=cfg, llm=llm, progress=False)
    s = result.summary
    stages = dict(s.seconds_per_stage)
    total = sum(stages.values())
    ctx.shared["obama_slice_index"] = result.path
    calls = [r for r in llm.records if not r["cached"]]
    secs = sum(r["seconds"] for r in calls)
    completion = sum(r["completion_tokens"] for r in calls)
    return {
        "corpus_tokens": n_tokens,
        **graph_counts(s),
        "reports": s.reports,
        "model_calls": s.model_calls,
        "seconds_per_stage": stages,
        "build_seconds_wall": rnd(t["s"], 1),
        "llm_share_of_build": rnd(stages.get("reports", 0.0) / total, 3) if total else None,
        "seconds_per_report": rnd(stages.get("reports", 0.0) / s.reports, 1) if s.reports else None,
        "llm_calls": calls,
        "llm_seconds": rnd(secs, 1),
        "report_completion_tokens_mean": rnd(completion / len(calls), 1) if calls else None,
        "report_prompt_tokens_mean": rnd(sum(r["prompt_tokens"] for r in calls) / len(calls), 1) if calls else None,
        # JSON-schema-constrained decoding as the build runs it: completion tokens per second, prompt included
        "report_tokens_per_s_end_to_end": rnd(completion / secs, 1) if secs else None,
    }


def thread_counts(path, prompt_tokens: int = 512, gen_tokens: int = 64) -> dict[str, Any]:
    """Generation with llama-cpp-python's default thread count (half the logical CPUs) against
    the library's (one per core: gguf.generation_threads), same model, same invocation: free
    generation and one JSON-schema-constrained report call, whose outputs must be the same."""
    import os

    from tiny_graphrag.backends.gguf import generation_threads
    from tiny_graphrag.backends.llm import LlamaCppLLM
    from tiny_graphrag.config import LLMConfig
    from tiny_graphrag.reports.prompt import report_messages, report_schema

    from .common import obama_text

    base = LLMConfig(model=str(path), n_ctx=2048)
    settings = {"llama_cpp_default": max((os.cpu_count() or 2) // 2, 1), "library_default": generation_threads(base)}
    context = obama_text()[:1800]
    out: dict[str, Any] = {"model": path.name, "cpus": os.cpu_count()}
    for name, n in settings.items():
        llm = LlamaCppLLM(LLMConfig(model=str(path), n_ctx=2048, n_threads=n))
        raw = raw_throughput(llm, prompt_tokens, gen_tokens)
        with stopwatch() as t:
            report = llm.complete(report_messages(context), schema=report_schema(300), max_tokens=300, temperature=0.0)
        out[name] = {
            "n_threads": n,
            "generation_tokens_per_s": raw["generation_tokens_per_s"],
            "prompt_tokens_per_s": raw["prompt_tokens_per_s"],
            "report_seconds": rnd(t["s"], 2),
            "report_completion_tokens": report.completion_tokens,
            "report_text": report.text,
        }
    a, b = out["llama_cpp_default"], out["library_default"]
    out["generation_speedup"] = rnd(b["generation_tokens_per_s"] / a["generation_tokens_per_s"], 2)
    out["report_speedup"] = rnd(a["report_seconds"] / b["report_seconds"], 2)
    out["same_report"] = a["report_text"] == b["report_text"]
    return out


def run(ctx: Context) -> dict[str, Any]:
    from tiny_graphrag.backends.llm import LlamaCppLLM

    path = gemma_path()
    with stopwatch() as t_load:
        llm = LlamaCppLLM(gemma_config())
    import llama_cpp

    out: dict[str, Any] = {
        "model": path.name,
        "llama_cpp_python": getattr(llama_cpp, "__version__", None),
        "gpu_offload": bool(llama_cpp.llama_supports_gpu_offload()),
        "n_ctx": llm.n_ctx,
        "load_seconds": rnd(t_load["s"], 2),
        "raw": raw_throughput(llm, ctx.mode.llm_prompt_tokens, ctx.mode.llm_gen_tokens),
    }
    from .answers import READER_FILE

    reader = path.parent / READER_FILE  # the demo's report writer, when set-up assembled it
    out["threads"] = thread_counts(reader if reader.exists() else path)
    if ctx.mode.llm_share_tokens:
        share = llm_share(ctx, ctx.mode.llm_share_tokens)
        out["build"] = share
        out["llm_share_of_build"] = share["llm_share_of_build"]
    else:
        out["build"] = "skipped in quick mode (a real report takes tens of seconds on 2 CPU cores)"
    return out


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    raw = r["raw"]
    rows = [
        ("model", f"{r['model']} (llama-cpp-python {r['llama_cpp_python']}, GPU offload: {r['gpu_offload']})"),
        ("prompt processing", f"{raw['prompt_tokens_per_s']} tok/s ({raw['prompt_tokens']} tokens)"),
        ("generation", f"{raw['generation_tokens_per_s']} tok/s ({raw['generated_tokens']} tokens)"),
    ]
    th = r.get("threads")
    if th:
        rows.append(
            (
                f"generation threads ({th['model']}, {th['cpus']} CPUs)",
                f"{th['library_default']['n_threads']} (ours) against {th['llama_cpp_default']['n_threads']} "
                f"(llama-cpp-python's default): generation x{th['generation_speedup']}, a constrained report "
                f"x{th['report_speedup']}, same report: {th['same_report']}",
            )
        )
    b = r["build"]
    if isinstance(b, dict):
        rows.append(
            (
                "report calls in the build (JSON schema)",
                f"{len(b['llm_calls'])} calls, mean {b['report_prompt_tokens_mean']} prompt + "
                f"{b['report_completion_tokens_mean']} completion tokens, {b['report_tokens_per_s_end_to_end']} "
                f"completion tok/s end to end",
            )
        )
        rows.append(
            (
                "build of Obama slice",
                f"{b['corpus_tokens']} tokens, {b['reports']} reports, stages {b['seconds_per_stage']}",
            )
        )
        rows.append(("LLM share of build time", f"{b['llm_share_of_build']} ({b['seconds_per_report']} s per report)"))
    else:
        rows.append(("LLM share of build time", b))
    return rows
