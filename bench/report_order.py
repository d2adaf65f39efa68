"""Community reports in four property orders and bounds: how much of each comes from its data.

    python -m bench.report_order --index graphs/obama [--index <another>] [--json out.json]

For every community of `--min-size` or more entities, the report the model writes with the
library's schema (evidence first), with GraphRAG's order (title, summary, rating, findings with
each summary before its explanation), with GraphRAG's order and bounds that leave a sentence's
room at small budgets, and findings first with each summary first. Measured per variant: the
share of the word trigrams of the report's title, summary and findings that are also in its own
prompt data (a proxy for how much
comes from the data rather than from the model), how many strings ran to their schema bound
(cut mid-phrase), and the output tokens. The reports are generated from each index's graph,
not read from it; the model is the one the demo uses unless `--llm` says otherwise.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from typing import Any

from tiny_graphrag.backends.llm import open_llm
from tiny_graphrag.config import LLMConfig
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.reports.context import SourceText, build_report_context
from tiny_graphrag.reports.prompt import report_messages, report_schema

_WORD = re.compile(r"[a-z0-9]+")
GRAPHRAG_ORDER = ["title", "summary", "rating", "rating_explanation", "findings"]
ROOMY_FLOORS = {"title": 60, "summary": 250, "rating_explanation": 100}
ROOMY_FINDING_FLOORS = {"summary": 80, "explanation": 200}


def reorder(schema: dict[str, Any], order: list[str], finding_order: list[str]) -> dict[str, Any]:
    out = copy.deepcopy(schema)
    props = out["properties"]
    out["properties"] = {k: props[k] for k in order}
    items = out["properties"]["findings"]["items"]
    items["properties"] = {k: items["properties"][k] for k in finding_order}
    return out


def roomy(schema: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(schema)
    for name, floor in ROOMY_FLOORS.items():
        out["properties"][name]["maxLength"] = max(floor, out["properties"][name]["maxLength"])
    finding = out["properties"]["findings"]["items"]["properties"]
    for name, floor in ROOMY_FINDING_FLOORS.items():
        finding[name]["maxLength"] = max(floor, finding[name]["maxLength"])
    return out


def variants(max_tokens: int) -> dict[str, dict[str, Any]]:
    ours = report_schema(max_tokens)
    graphrag = reorder(ours, GRAPHRAG_ORDER, ["summary", "explanation"])
    return {
        "evidence first (the library's)": ours,
        "GraphRAG's order": graphrag,
        "GraphRAG's order, roomy bounds": roomy(graphrag),
        "findings first, summary before explanation, roomy": roomy(
            reorder(ours, ["findings", "rating", "rating_explanation", "summary", "title"], ["summary", "explanation"])
        ),
    }


def trigrams(text: str) -> list[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return [tuple(words[i : i + 3]) for i in range(len(words) - 2)]


def strings_of(report: dict[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    out = [((k,), report[k]) for k in ("title", "summary", "rating_explanation")]
    return out + [(("findings", k), f[k]) for f in report["findings"] for k in ("summary", "explanation")]


def bound_of(schema: dict[str, Any], path: tuple[str, ...]) -> int:
    props = schema["properties"]
    spec = props[path[0]] if len(path) == 1 else props["findings"]["items"]["properties"][path[1]]
    return spec["maxLength"]


def measure(index: str, llm, *, max_tokens: int, context_tokens: int, min_size: int) -> dict[str, Any]:
    store = IndexStore.open(index)
    graph, communities = store.graph(), store.communities()
    starts = {c.id: c.start for c in store.chunks()}
    sources = {cid: SourceText(sid, text, starts[cid]) for cid, (sid, text) in store.sources().items()}
    chosen = sorted(
        (c for c in communities if len(c.nodes) >= min_size and c.level == 0), key=lambda c: (-len(c.nodes), c.id)
    )
    contexts = [build_report_context(c, graph, sources, llm.count_tokens, context_tokens).text for c in chosen]
    out: dict[str, Any] = {"index": index, "communities": len(chosen), "variants": {}}
    for name, schema in variants(max_tokens).items():
        copied = total = at_bound = n_strings = tokens = invalid = 0
        reports = []
        for context in contexts:
            done = llm.complete(report_messages(context), schema=schema, max_tokens=max_tokens)
            tokens += done.completion_tokens
            try:
                report = json.loads(done.text)
            except json.JSONDecodeError:
                invalid += 1
                reports.append(None)
                continue
            strings = strings_of(report)
            seen = set(trigrams(context))
            grams = trigrams(
                " ".join(
                    [report["title"], report["summary"]]
                    + [f"{f['summary']} {f['explanation']}" for f in report["findings"]]
                )
            )
            copied += sum(g in seen for g in grams)
            total += len(grams)
            at_bound += sum(len(s) >= bound_of(schema, path) for path, s in strings)
            n_strings += len(strings)
            reports.append(report)
        out["variants"][name] = {
            "trigrams_from_data_pct": round(100 * copied / max(1, total), 1),
            "trigrams": total,
            "strings_at_bound": at_bound,
            "strings": n_strings,
            "invalid": invalid,
            "mean_output_tokens": round(tokens / max(1, len(contexts)), 1),
            "reports": reports,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", action="append", required=True)
    ap.add_argument("--llm", default="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    ap.add_argument("--max-tokens", type=int, default=300)  # the demo's --report-max-tokens
    ap.add_argument("--context-tokens", type=int, default=1200)  # the demo's --report-context-tokens
    ap.add_argument("--min-size", type=int, default=5)  # the demo's --report-min-size
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    llm = open_llm(LLMConfig(model=args.llm, n_ctx=4096, n_threads=args.threads))
    results = [
        measure(i, llm, max_tokens=args.max_tokens, context_tokens=args.context_tokens, min_size=args.min_size)
        for i in args.index
    ]
    for r in results:
        for name, v in r["variants"].items():
            sys.stdout.write(
                f"{r['index']} ({r['communities']} reports) | {name}: {v['trigrams_from_data_pct']}% of "
                f"{v['trigrams']} trigrams from the data, {v['strings_at_bound']}/{v['strings']} strings "
                f"at their bound, {v['mean_output_tokens']} output tokens\n"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
