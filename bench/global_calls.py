"""Global search: LLM calls and prompt tokens per query, ours against one call per community.

Ours (GraphRAG's map-reduce): the reports of one level are packed into map batches of at most
`map_chunk_tokens` tokens, one map call per batch, then one reduce call. The seed (Tiny
GraphRAG): one call per community report ("Community Summary: ...  Query: ..."), then one call
to combine the answers. Both are counted on the same index and the same reports, at the level
our default rule chooses and at every level. Counting needs no generation: `global_search(...,
only_context=True)` returns the exact map batches; every prompt is counted with the GGUF's own
tokenizer and chat template (Gemma 3 270M). The reduce/combine call is one call on each side;
its prompt depends on the map answers, so the map phase's prompt tokens are compared, and the
reduce prompt's size limit is reported.

Indexes: (a) the whole Obama article with stand-in reports (bench.standin; every community has
one), (b) when the `llm` section ran, an Obama slice whose reports Gemma wrote. "Ours" per level
is `EVERY_REPORT`: the selection made to keep every report in reach, the deepest reports down to
the level (it stands in for the level way, removed from the library, which mapped only that level's
reports); "dynamic" is the library's default (search/selection.py): its map calls and prompt
tokens against that and the seed.
"""

from __future__ import annotations

import logging
import statistics
from pathlib import Path
from typing import Any

from .common import Context, load_gemma, ratio, rnd

log = logging.getLogger("bench.global_calls")

# The seed's prompts (Tiny GraphRAG prompts.py), verbatim.
SEED_SYSTEM = (
    "\nAnswer the query based only on the provided community summary. If the summary doesn't contain "
    "relevant information, say 'No relevant information found.'\n"
)
# Dynamic selection with nothing left out: no cutoff, no budget, every question near enough.
EVERY_REPORT = {"dynamic_cutoff": 0.0, "dynamic_share": 1.0, "dynamic_map_calls": 10_000, "min_similarity": -1.0}
SEED_COMBINE = "\nCombine the provided answers into a single coherent response that fully addresses the query.\n"

QUERIES = [
    "What are the main themes of Barack Obama's life and career?",
    "Which policies defined the Obama administration?",
    "What shaped Obama's early life and education?",
    "How did Obama's foreign policy approach conflicts abroad?",
    "What role did family play in Obama's life?",
    "How was Obama received by the public and the press?",
    "What did Obama do before becoming president?",
    "Which organizations did Obama work with?",
    "How did Obama's economic policy respond to the recession?",
    "What is Obama's legacy?",
]


def exact_tokens(llm, messages: list[dict]) -> int:
    """Prompt tokens exactly as llama.cpp would run them (chat template included)."""
    if hasattr(llm, "prompt_token_ids"):  # LlamaCppLLM
        return len(llm.prompt_token_ids(messages))
    from tiny_graphrag.search.prompts import prompt_tokens  # another LLM class: contents only

    return prompt_tokens(messages, llm.count_tokens)


def seed_messages(report_text: str, query: str) -> list[dict]:
    return [
        {"role": "system", "content": SEED_SYSTEM},
        {"role": "user", "content": f"Community Summary:\n{report_text}\n\nQuery: {query}"},
    ]


def measure_index(path: Path, llm, queries: list[str]) -> dict[str, Any]:
    from tiny_graphrag.search.config import GlobalConfig, SearchConfig
    from tiny_graphrag.search.engine import QueryEngine
    from tiny_graphrag.search.prompts import map_messages, reduce_messages

    # the large reader's path, map-reduce (a small reader quotes sentences without a call)
    level_way = SearchConfig(global_=GlobalConfig(**EVERY_REPORT), reader="large")
    qe = QueryEngine(path, llm=llm, config=level_way)
    levels = qe.index.globals.levels
    report_tokens = [llm.count_tokens(r.text()) for r in qe.index.globals.reports]
    per_level: dict[int, dict[str, Any]] = {}
    per_query = []
    seed_cache: dict[tuple[int, str], int] = {}
    for q in queries:
        row: dict[str, Any] = {"query": q}
        default = qe.global_search(q, only_context=True)
        chosen = default.details["level"]
        for level in levels:
            res = default if level == chosen else qe.global_search(q, level, only_context=True)
            d = res.details
            ours_tokens = sum(exact_tokens(llm, map_messages(text, q)) for text in d["map_contexts"])
            reports = qe.index.globals.at_level(level)
            seed_tokens = 0
            for rid, rep in reports:
                key = (rid, q)
                if key not in seed_cache:
                    seed_cache[key] = exact_tokens(llm, seed_messages(rep.text(), q))
                seed_tokens += seed_cache[key]
            lv = {
                "reports": len(reports),
                "ours_map_calls": d["map_chunks"],
                "ours_map_prompt_tokens": ours_tokens,
                "seed_calls": len(reports),
                "seed_prompt_tokens": seed_tokens,
            }
            per_level.setdefault(level, {"reports": len(reports), "rows": []})["rows"].append(lv)
            if level == chosen:
                row.update(level=level, **lv)
                row["reduce_prompt_tokens_max"] = exact_tokens(llm, reduce_messages("", q)) + d["reduce_budget"]
        # dynamic selection, the library's default, against the level way at its default level
        dyn = qe.global_search(q, only_context=True, config=GlobalConfig()).details
        row["dynamic"] = {
            "reports_mapped": dyn["reports_mapped"],
            "map_calls": dyn["map_chunks"],
            "map_calls_without": default.details["map_chunks"],
            "map_prompt_tokens": sum(exact_tokens(llm, map_messages(t, q)) for t in dyn["map_contexts"]),
        }
        per_query.append(row)
    qe.close()

    def mean(key: str, rows: list[dict]) -> float:
        return rnd(statistics.mean(r[key] for r in rows), 1)

    levels_out = {}
    for level, info in per_level.items():
        rows = info["rows"]
        levels_out[str(level)] = {
            "reports": info["reports"],
            "ours_calls_per_query": rnd(mean("ours_map_calls", rows) + 1, 1),
            "seed_calls_per_query": rnd(mean("seed_calls", rows) + 1, 1),
            "ours_map_prompt_tokens_per_query": mean("ours_map_prompt_tokens", rows),
            "seed_prompt_tokens_per_query": mean("seed_prompt_tokens", rows),
        }
    ours_calls = statistics.mean(r["ours_map_calls"] + 1 for r in per_query)
    seed_calls = statistics.mean(r["seed_calls"] + 1 for r in per_query)
    ours_tok = statistics.mean(r["ours_map_prompt_tokens"] for r in per_query)
    seed_tok = statistics.mean(r["seed_prompt_tokens"] for r in per_query)
    dyn_rows = [r["dynamic"] for r in per_query]
    dyn_tok = statistics.mean(p["map_prompt_tokens"] for p in dyn_rows)
    return {
        "levels": levels,
        "reports": len(qe.index.globals.reports),
        "report_tokens_mean": rnd(statistics.mean(report_tokens), 1) if report_tokens else None,
        "map_chunk_tokens": qe.config.global_.map_chunk_tokens,
        "default_level": per_query[0]["level"] if per_query else None,
        "ours_calls_per_query": rnd(ours_calls, 2),
        "seed_calls_per_query": rnd(seed_calls, 2),
        "ours_map_prompt_tokens_per_query": rnd(ours_tok, 1),
        "seed_prompt_tokens_per_query": rnd(seed_tok, 1),
        "calls_ratio_seed_over_ours": ratio(seed_calls, ours_calls),
        "prompt_tokens_ratio_seed_over_ours": ratio(seed_tok, ours_tok),
        "per_level": levels_out,
        "dynamic": {
            "map_calls_mean": rnd(statistics.mean(p["map_calls"] for p in dyn_rows), 2),
            "map_calls_without_mean": rnd(statistics.mean(p["map_calls_without"] for p in dyn_rows), 2),
            "map_calls_saved_mean": rnd(statistics.mean(p["map_calls_without"] - p["map_calls"] for p in dyn_rows), 2),
            "map_prompt_tokens_mean": rnd(dyn_tok, 1),
            "map_prompt_tokens_ratio_to_seed": ratio(dyn_tok, seed_tok),
        },
        "per_query": per_query,
    }


def run(ctx: Context) -> dict[str, Any]:
    from .standin import obama_index

    llm = load_gemma()
    queries = QUERIES[: ctx.mode.global_queries]
    info = obama_index(ctx)
    out: dict[str, Any] = {"tokenizer": llm.name, "queries": len(queries)}
    out["obama_standin"] = {"index": info["summary"], **measure_index(Path(info["path"]), llm, queries)}
    main = out["obama_standin"]
    out["calls_ratio_seed_over_ours"] = main["calls_ratio_seed_over_ours"]
    out["prompt_tokens_ratio_seed_over_ours"] = main["prompt_tokens_ratio_seed_over_ours"]
    out["dynamic"] = main["dynamic"]
    slice_index = ctx.shared.get("obama_slice_index")
    if slice_index is not None:
        out["obama_slice_gemma_reports"] = measure_index(Path(slice_index), llm, queries)
    else:
        out["obama_slice_gemma_reports"] = "not measured (needs the llm section, which quick mode skips)"
    return out


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for key, label in (
        ("obama_standin", "Obama, stand-in reports"),
        ("obama_slice_gemma_reports", "Obama slice, Gemma reports"),
    ):
        m = r.get(key)
        if not isinstance(m, dict):
            rows.append((label, str(m)))
            continue
        rows.append(
            (
                f"{label}: reports / levels",
                f"{m['reports']} reports (mean {m['report_tokens_mean']} tokens), levels {m['levels']}, default level {m['default_level']}",
            )
        )
        rows.append(
            (
                f"{label}: LLM calls per query ours / seed",
                f"{m['ours_calls_per_query']} / {m['seed_calls_per_query']} (RATIO seed/ours {m['calls_ratio_seed_over_ours']}x)",
            )
        )
        rows.append(
            (
                f"{label}: map prompt tokens ours / seed",
                f"{m['ours_map_prompt_tokens_per_query']} / {m['seed_prompt_tokens_per_query']} (RATIO seed/ours {m['prompt_tokens_ratio_seed_over_ours']}x)",
            )
        )
        for level, lv in m["per_level"].items():
            rows.append(
                (
                    f"  level {level} ({lv['reports']} reports)",
                    f"calls {lv['ours_calls_per_query']} vs {lv['seed_calls_per_query']}, "
                    f"tokens {lv['ours_map_prompt_tokens_per_query']} vs {lv['seed_prompt_tokens_per_query']}",
                )
            )
        p = m["dynamic"]
        rows.append(
            (
                f"{label}: dynamic selection (default)",
                f"map calls {p['map_calls_without_mean']} -> {p['map_calls_mean']} (saved {p['map_calls_saved_mean']}), "
                f"map prompt tokens {p['map_prompt_tokens_mean']} ({p['map_prompt_tokens_ratio_to_seed']}x the seed's)",
            )
        )
    return rows
