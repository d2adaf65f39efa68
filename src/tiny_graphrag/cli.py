"""The command line: a thin layer over build_index, IndexStore, QueryEngine and download_models."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import replace
from pathlib import Path

from .errors import TinyGraphRAGError

log = logging.getLogger("tiny_graphrag")


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tiny-graphrag", description="A small, fully local GraphRAG.")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build", help="build an index from .txt/.md files or directories")
    b.add_argument("inputs", nargs="+", help=".txt/.md files or directories")
    b.add_argument("--out", required=True, help="index directory, e.g. graphs/NAME")
    b.add_argument("--schema", help="schema file (.toml/.yaml/.json) or preset name (general, biomedical, finance, geography)")
    b.add_argument("--extractor", choices=["gliner", "spacy"], default="gliner")
    b.add_argument("--spacy-model", help="installed spaCy pipeline or path (default en_core_web_sm)")
    b.add_argument("--gliner-model", help="GLiNER model folder name under models/ or a path")
    b.add_argument("--glirel-model", help="GLiREL model folder name under models/ or a path")
    b.add_argument("--embedder", help="sentence-transformers model name under models/ or a path")
    b.add_argument("--llm", help="GGUF file name under models/ or a path")
    b.add_argument("--chat-format", help="llama.cpp chat format, when the GGUF has no template (e.g. gemma)")
    b.add_argument("--n-ctx", type=int, help="LLM context window in tokens")
    b.add_argument("--no-reports", action="store_true", help="skip community reports (no LLM needed)")
    b.add_argument("--report-max-tokens", type=int, help="output budget per community report (default 800)")
    b.add_argument("--report-context-tokens", type=int, help="context budget per community report (default: what n_ctx leaves)")
    b.add_argument("--entity-threshold", type=float)
    b.add_argument("--relation-threshold", type=float)
    b.add_argument("--max-tokens", type=int, help="chunk size in word tokens")
    b.add_argument("--overlap", type=int, help="chunk overlap in word tokens")
    b.add_argument("--max-cluster-size", type=int)
    b.add_argument("--device", help="torch device (default: cuda, mps, else cpu)")
    b.add_argument("--models-dir", help="where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")
    b.add_argument("--json", action="store_true", help="print the summary as JSON")

    i = sub.add_parser("info", help="describe a built index")
    i.add_argument("index")
    i.add_argument("--top", type=int, default=5, help="how many top-rated reports to list")
    i.add_argument("--json", action="store_true")

    q = sub.add_parser("query", help="ask a question of an index")
    q.add_argument("mode", choices=["local", "global", "naive"])
    q.add_argument("question")
    q.add_argument("--index", required=True)
    q.add_argument("--level", type=int, help="community level for global search")
    q.add_argument("--show-context", action="store_true", help="print the context the model saw")
    q.add_argument("--only-context", action="store_true", help="build the context without calling the LLM")
    q.add_argument("--json", action="store_true")
    q.add_argument("--llm", help="GGUF file name under models/ or a path (default: the one the index was built with)")
    q.add_argument("--chat-format")
    q.add_argument("--models-dir")

    m = sub.add_parser("models", help="list or download the default models")
    msub = m.add_subparsers(dest="models_command", required=True)
    d = msub.add_parser("download", help="download the default models (needs network access)")
    d.add_argument("--only", nargs="+", help="model names to fetch")
    d.add_argument("--models-dir")
    ls = msub.add_parser("list", help="show where each default model is expected and whether it is there")
    ls.add_argument("--models-dir")
    return p


def _build(args) -> int:
    from .build import build_index
    from .config import BuildConfig

    cfg = BuildConfig()
    ex = cfg.extraction
    ex = replace(
        ex,
        extractor=args.extractor,
        **{k: v for k, v in {
            "spacy_model": args.spacy_model, "gliner_model": args.gliner_model, "glirel_model": args.glirel_model,
            "entity_threshold": args.entity_threshold, "relation_threshold": args.relation_threshold,
            "device": args.device,
        }.items() if v is not None},
    )
    ch = replace(cfg.chunking, **{k: v for k, v in {"max_tokens": args.max_tokens, "overlap_tokens": args.overlap}.items() if v is not None})
    llm = replace(cfg.llm, **{k: v for k, v in {"model": args.llm, "chat_format": args.chat_format, "n_ctx": args.n_ctx,
                                        "max_report_tokens": args.report_max_tokens,
                                        "report_context_tokens": args.report_context_tokens}.items() if v is not None})
    com = replace(cfg.communities, **({"max_cluster_size": args.max_cluster_size} if args.max_cluster_size else {}))
    cfg = replace(cfg, extraction=ex, chunking=ch, llm=llm, communities=com, reports=not args.no_reports,
                  models_dir=args.models_dir, **({"embedder_model": args.embedder} if args.embedder else {}))
    result = build_index(args.inputs, args.out, schema=args.schema, config=cfg, progress=True)
    if args.json:
        print(json.dumps(result.summary.to_dict(), indent=2))
    else:
        print(f"index: {result.path}")
        print(result.summary.format())
    return 0


def index_info(path: str | Path, top: int = 5) -> dict:
    """Documents, chunks, entities, relations, community levels and the top reports of an index."""
    from collections import Counter

    from .store import IndexStore

    store = IndexStore.open(path)
    m = store.manifest
    communities = store.communities()
    levels: dict[int, list[int]] = {}
    for c in communities:
        levels.setdefault(c.level, []).append(len(c.nodes))
    reports = sorted(store.reports(), key=lambda r: -r.rating)
    graph = store.graph()
    info = {
        "index": str(path),
        "format_version": m.get("format_version"),
        "library_version": m.get("library_version"),
        "created": m.get("created"),
        "documents": m.get("documents", []),
        "counts": m.get("counts", {}),
        "entities_per_type": dict(Counter(d.get("type") for _, d in graph.nodes(data=True))),
        "relations_per_label": dict(Counter(k for _, _, k in graph.edges(keys=True))),
        "merged_aliases": len(graph.graph.get("merges", [])),
        "levels": [
            {"level": lvl, "communities": len(sizes), "min_size": min(sizes), "max_size": max(sizes),
             "mean_size": round(sum(sizes) / len(sizes), 2)}
            for lvl, sizes in sorted(levels.items())
        ],
        "top_reports": [
            {"community": r.community_id, "level": r.level, "rating": r.rating, "title": r.title, "summary": r.summary}
            for r in reports[:top]
        ],
        "models": {"extractor": m.get("extractor"), "embedder": m.get("embedder"), "llm": m.get("llm")},
    }
    store.close()
    return info


def _info(args) -> int:
    info = index_info(args.index, args.top)
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
        return 0
    c = info["counts"]
    print(f"index {info['index']} (format {info['format_version']}, built {info['created']} by {info['library_version']})")
    print(f"documents: {c.get('documents')}  chunks: {c.get('chunks')}  entities: {c.get('entities')}  "
          f"relations: {c.get('relations')}  merged aliases: {info['merged_aliases']}")
    for t, n in sorted(info["entities_per_type"].items(), key=lambda x: -x[1]):
        print(f"  entity {t}: {n}")
    for t, n in sorted(info["relations_per_label"].items(), key=lambda x: -x[1]):
        print(f"  relation {t}: {n}")
    for lvl in info["levels"]:
        print(f"level C{lvl['level']}: {lvl['communities']} communities, size {lvl['min_size']}-{lvl['max_size']} "
              f"(mean {lvl['mean_size']})")
    for r in info["top_reports"]:
        print(f"  [{r['rating']:.1f}] {r['title']} ({r['community']}, C{r['level']})")
    return 0


def _query(args) -> int:
    from .config import LLMConfig
    from .errors import InputError
    from .search.engine import QueryEngine

    if args.level is not None and args.mode != "global":
        raise InputError("--level is only for global search")
    llm = None
    if args.llm or args.chat_format:
        llm = LLMConfig(**{k: v for k, v in {"model": args.llm, "chat_format": args.chat_format}.items() if v})
    qe = QueryEngine(args.index, llm=llm, models_dir=args.models_dir)
    kwargs = {"level": args.level} if args.mode == "global" else {}
    stream = not args.json and not args.only_context
    result = getattr(qe, f"{args.mode}_search")(args.question, only_context=args.only_context, stream=stream, **kwargs)
    if args.show_context or args.only_context:
        print("----- context -----")
        print(result.context)
        if args.only_context:
            return 0
        print("----- answer -----")
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        for piece in result:  # the answer, streamed as the model writes it
            print(piece, end="", flush=True)
        print()
        result = result.result
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _models(args) -> int:
    from .models import DEFAULT_MODELS, download_models, models_dir

    if args.models_command == "download":
        for path in download_models(args.only, models_dir_=args.models_dir):
            print(f"downloaded {path}")
        return 0
    from .models import verify_checksums

    base = models_dir(args.models_dir)
    for name, spec in DEFAULT_MODELS.items():
        there = (base / name).exists()
        print(f"{'ok     ' if there else 'missing'} {base / name}  ({spec.purpose}; from {spec.repo}@{spec.revision})")
    bad = [name for name, ok in verify_checksums(args.models_dir).items() if not ok]
    for name in bad:
        print(f"checksum mismatch or missing: {base / name} (re-download it)")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return {"build": _build, "info": _info, "query": _query, "models": _models}[args.command](args)
    except TinyGraphRAGError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: nothing was published; rerun the same command to resume from the cache", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
