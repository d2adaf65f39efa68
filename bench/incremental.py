"""Incremental updates against full rebuilds of the same final document set (issue 14).

    python -m bench.incremental [--docs 100] [--work bench/out/incremental] [--json out.json]
                                [--llm models/SmolLM2-135M-Instruct.Q4_1.gguf --report-min-size 4]

An index of `--docs` HotpotQA passages (one file each; spaCy extractor with sentence
co-occurrence relations, all-MiniLM-L6-v2, alias resolution, Leiden, community reports), then
add 1 passage, add 10, remove 1. After each update, a full build of the resulting documents with
a fresh model-call cache, in the same process: extraction calls (chunks), embedding calls
(texts), report calls and seconds of both, and their ratio. Each update is also checked equal to
its rebuild (graph nodes, edges, attributes, communities, reports).

Reports: by default the extractive stand-in (bench/standin.py; its calls go through the real
report code path and cache, so call counts are exact; its seconds are not a model's). With
--llm, a real GGUF writes them (slow on 2 cores: limit them with --report-min-size).
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

from .common import HOTPOT, ROOT, dump_json, machine_info, quiet_logs, ratio, rnd, spacy_extraction_config

log = logging.getLogger("bench.incremental")


def _passages(n: int) -> list[tuple[str, str]]:
    raw = json.loads((HOTPOT / "corpus.json").read_text(encoding="utf-8"))
    items = [(t, " ".join(s.strip() for s in sents if s.strip())) for t, sents in raw.items()]
    return sorted(items)[:n]  # sorted titles: the same passages in every run


def _write(passages: list[tuple[str, str]], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (title, text) in enumerate(passages):
        p = folder / f"{i:04d}.txt"
        p.write_text(f"{title}\n{text}\n", encoding="utf-8")
        paths.append(p)
    return paths


def _config(args, cache_dir: Path | None):
    from tiny_graphrag.config import BuildConfig, ChunkingConfig, LLMConfig

    llm = (
        LLMConfig(
            model=str(args.llm),
            n_ctx=2048,
            max_report_tokens=200,
            report_context_tokens=800,
            report_min_size=args.report_min_size,
        )
        if args.llm
        else LLMConfig(report_min_size=args.report_min_size)
    )
    return BuildConfig(
        chunking=ChunkingConfig(),
        extraction=spacy_extraction_config(),
        llm=llm,
        cache_dir=str(cache_dir) if cache_dir else None,
    )


def _llm(args):
    if args.llm:
        return {}
    from .standin import standin_llm

    return {"llm": standin_llm().backend}  # bare: the build puts it behind its own call cache


def _costs(summary, seconds: float) -> dict[str, Any]:
    calls = summary.model_calls
    return {
        "extraction": calls.get("extraction", 0),
        "embedding": calls.get("embedding", 0),
        "llm": calls.get("llm", 0),
        "seconds": rnd(seconds, 2),
    }


def _same(a: Path, b: Path) -> bool:
    from tiny_graphrag.index.store import IndexStore

    sa, sb = IndexStore.open(a), IndexStore.open(b)
    ga, gb = sa.graph(), sb.graph()
    same = (
        dict(ga.nodes(data=True)) == dict(gb.nodes(data=True))
        and {e[:3]: e[3] for e in ga.edges(keys=True, data=True)}
        == {e[:3]: e[3] for e in gb.edges(keys=True, data=True)}
        and sa.communities() == sb.communities()
        and sa.reports() == sb.reports()
    )
    sa.close(), sb.close()
    return same


def run(args) -> dict[str, Any]:
    from tiny_graphrag import build_index, load_index

    work = Path(args.work)
    paths = _write(_passages(args.docs + 11), work / "docs")
    base, extra = paths[: args.docs], paths[args.docs :]
    out = work / "inc" / "idx"
    t0 = time.perf_counter()
    first = build_index(base, out, config=_config(args, None), progress=False, force=True, **_llm(args))
    result: dict[str, Any] = {
        "documents": args.docs,
        "base": _costs(first.summary, time.perf_counter() - t0),
        "base_graph": {
            "entities": sum(first.summary.entities_per_type.values()),
            "communities": sum(first.summary.communities_per_level.values()),
            "reports": first.summary.reports,
        },
    }
    index = load_index(out)
    final = list(base)
    steps = [
        ("add_1", lambda: index.add(extra[:1], **_llm(args)), lambda: final.extend(extra[:1])),
        ("add_10", lambda: index.add(extra[1:11], **_llm(args)), lambda: final.extend(extra[1:11])),
        ("remove_1", lambda: index.remove([str(base[0])], **_llm(args)), lambda: final.remove(base[0])),
    ]
    for name, update, apply in steps:
        t0 = time.perf_counter()
        inc = update()
        inc_costs = _costs(inc.summary, time.perf_counter() - t0)
        apply()
        rebuilt = work / f"full-{name}"
        t0 = time.perf_counter()
        full = build_index(
            final, rebuilt / "idx", config=_config(args, rebuilt / "cache"), progress=False, force=True, **_llm(args)
        )
        full_costs = _costs(full.summary, time.perf_counter() - t0)
        result[name] = {
            "incremental": inc_costs,
            "full_rebuild": full_costs,
            "ratio": {k: rnd(ratio(inc_costs[k], full_costs[k])) for k in inc_costs},
            "changes": inc.summary.changes,
            "equal_to_rebuild": _same(out, rebuilt / "idx"),
        }
        log.info("%s: %s", name, result[name])
    index.close()
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=100)
    p.add_argument("--work", default=str(ROOT / "bench" / "out" / "incremental"))
    p.add_argument("--json", default=str(ROOT / "bench" / "results" / "incremental.json"))
    p.add_argument("--llm", type=Path, help="a GGUF for real reports (default: the extractive stand-in)")
    p.add_argument("--report-min-size", type=int, default=1, help="communities of fewer entities get no report")
    args = p.parse_args(argv)
    quiet_logs()
    logging.getLogger("bench").setLevel(logging.INFO)
    data = {
        "machine": machine_info(),
        "reports_by": str(args.llm or "extractive stand-in"),
        "report_min_size": args.report_min_size,
        **run(args),
    }
    dump_json(data, Path(args.json))
    print(json.dumps({k: v for k, v in data.items() if k != "machine"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
