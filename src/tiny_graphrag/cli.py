"""The command line: a thin layer over build_index, IndexStore, QueryEngine and download_models."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

from .config import BuildConfig
from .errors import ConfigError, InputError, TinyGraphRAGError
from .store import IndexStore

log = logging.getLogger("tiny_graphrag")


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    return parse


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got '{text}'") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def _device(text: str) -> str:
    if not re.fullmatch(r"cpu|cuda(:\d+)?|mps", text):
        raise argparse.ArgumentTypeError(f"expected cpu, cuda, cuda:N or mps, got '{text}'")
    return text


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, but not the "None" of options whose default is decided later."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default in (None, False, argparse.SUPPRESS) or "%(default)" in (action.help or ""):
            return action.help or ""
        return super()._get_help_string(action)


def _build_parser() -> argparse.ArgumentParser:
    from .extract.base import extractor_names

    # -v is accepted before and after the subcommand: a shared parent with a suppressed default
    # keeps the top-level value when the subcommand does not repeat it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log progress details")
    kw = {"parents": [common], "formatter_class": _Formatter}
    p = argparse.ArgumentParser(prog="tiny-graphrag", description="A small, fully local GraphRAG.", **kw)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = sub.add_parser("build", help="build an index from .txt/.md files or directories", **kw)
    b.add_argument("inputs", nargs="+", type=Path, help="existing .txt/.md files or directories of them")
    b.add_argument("--out", required=True, type=Path,
                   help="index folder, e.g. graphs/NAME: new, empty, or an existing index, which is replaced once "
                        "the new one is complete; nothing else is ever replaced")
    b.add_argument("--force", action="store_true",
                   help="also replace an unfinished index (index files without a manifest) at --out")
    b.add_argument("--schema", help="schema file (.toml/.yaml/.json) or preset name (general, biomedical, finance, "
                                    "geography; default general)")
    b.add_argument("--extractor", choices=extractor_names(), default="gliner",
                   help="entity/relation extractor")
    b.add_argument("--spacy-model", help="installed spaCy pipeline or path (default en_core_web_sm)")
    b.add_argument("--gliner-model", help="GLiNER model folder name under models/ or a path (default gliner_mediumv2.1)")
    b.add_argument("--glirel-model", help="GLiREL model folder name under models/ or a path (default glirel-large-v0)")
    b.add_argument("--embedder", help="sentence-transformers model name under models/ or a path (default all-MiniLM-L6-v2)")
    b.add_argument("--llm", help="GGUF file name under models/ or a path, for community reports "
                                 "(default Llama-3.2-3B-Instruct-Q4_K_M.gguf)")
    b.add_argument("--chat-format", help="llama.cpp chat format, when the GGUF has no template (e.g. gemma)")
    b.add_argument("--n-ctx", type=_int_at_least(256), help="LLM context window in tokens (default 4096)")
    b.add_argument("--no-reports", action="store_true", help="skip community reports (no LLM needed)")
    b.add_argument("--tree", action=argparse.BooleanOptionalAction, default=False,
                   help="build a RAPTOR tree of recursive summaries for `query tree` (an LLM call per cluster; "
                        "needs the 'tree' extra)")
    b.add_argument("--report-max-tokens", type=_int_at_least(1), help="output budget per community report (default 800)")
    b.add_argument("--report-context-tokens", type=_int_at_least(1),
                   help="context budget per community report (default: what --n-ctx leaves)")
    b.add_argument("--report-min-size", type=_int_at_least(1),
                   help="communities of fewer entities get no report (default 1: all)")
    b.add_argument("--entity-threshold", type=_fraction, help="minimum entity score, in [0, 1] (default 0.5)")
    b.add_argument("--relation-threshold", type=_fraction, help="minimum relation score, in [0, 1] (default 0.5)")
    b.add_argument("--max-tokens", type=_int_at_least(8), help="chunk size in word tokens (default 256)")
    b.add_argument("--overlap", type=_int_at_least(0),
                   help="chunk overlap in word tokens, less than --max-tokens (default 32)")
    b.add_argument("--max-cluster-size", type=_int_at_least(1),
                   help="largest community before Leiden splits it into the next level (default 10)")
    b.add_argument("--device", type=_device, help="torch device: cpu, cuda, cuda:N or mps (default: cuda, mps, else cpu)")
    b.add_argument("--models-dir", help="where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")
    b.add_argument("--json", action="store_true", help="print the summary as JSON")

    i = sub.add_parser("info", help="describe a built index", **kw)
    i.add_argument("index", help="an index folder written by build")
    i.add_argument("--top", type=_int_at_least(0), default=5, help="how many top-rated reports to list")
    i.add_argument("--json", action="store_true", help="print as JSON")

    q = sub.add_parser("query", help="ask a question of an index", **kw)
    q.add_argument("mode", choices=["local", "global", "naive", "tree"], help="search mode")
    q.add_argument("question", help="the question, in quotes")
    q.add_argument("--index", required=True, help="an index folder written by build")
    q.add_argument("--level", type=_int_at_least(0), help="community level for global search (default: chosen by size)")
    q.add_argument("--strategy", choices=["collapsed", "traversal"],
                   help="tree search: rank every layer at once (collapsed, the default) or walk down from the top")
    q.add_argument("--show-context", action="store_true", help="print the context the model saw")
    q.add_argument("--only-context", action="store_true", help="build the context without calling the LLM")
    q.add_argument("--stream", action="store_true",
                   help="print the answer as it is generated (raw: citations are checked only at the end)")
    q.add_argument("--json", action="store_true", help="print the whole result as JSON")
    q.add_argument("--llm", help="GGUF file name under models/ or a path (default: the one the index was built with)")
    q.add_argument("--chat-format", help="llama.cpp chat format, when the GGUF has no template (e.g. gemma)")
    q.add_argument("--n-ctx", type=_int_at_least(256), help="LLM context window in tokens (default: the build's)")
    q.add_argument("--models-dir", help="where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")

    e = sub.add_parser("evaluate", help="judge two search modes head to head on global questions (GraphRAG paper "
                                        "§4.1): win rates per criterion and the judge's order agreement", **kw)
    e.add_argument("--index", required=True, help="an index folder written by build (with community reports)")
    e.add_argument("--judge", help="GGUF file name under models/ or a path, that writes the questions and judges "
                                   "(default: the index's LLM; a larger model gives a trustworthy judge)")
    e.add_argument("--questions", type=_int_at_least(1), default=8, help="how many questions to generate")
    e.add_argument("--questions-file", type=Path, help="questions to use instead, one per line")
    e.add_argument("--source", choices=["personas", "reports"], default="personas",
                   help="generate questions from personas -> tasks -> questions, or from the top community reports")
    e.add_argument("--description", help="a sentence or two describing the corpus, for personas "
                                         "(default: the documents' openings and top report titles)")
    e.add_argument("--a", default="global", choices=["global", "naive", "local"], help="first search mode")
    e.add_argument("--b", default="naive", choices=["global", "naive", "local"], help="second search mode")
    e.add_argument("--answer-tokens", type=_int_at_least(16), default=700,
                   help="each answer is cut to this many tokens for the judge")
    e.add_argument("--llm", help="GGUF that answers (default: the one the index was built with)")
    e.add_argument("--chat-format", help="llama.cpp chat format of --judge, when the GGUF has no template")
    e.add_argument("--n-ctx", type=_int_at_least(256), help="judge context window in tokens (default 4096)")
    e.add_argument("--models-dir", help="where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")
    e.add_argument("--out", type=Path, help="also write the whole evaluation (questions, answers, verdicts) as JSON")
    e.add_argument("--json", action="store_true", help="print the whole evaluation as JSON")

    m = sub.add_parser("models", help="list or download the default models", **kw)
    msub = m.add_subparsers(dest="models_command", required=True, metavar="ACTION")
    d = msub.add_parser("download", help="download the default models (needs network access)", **kw)
    d.add_argument("--only", nargs="+", help="model names to fetch (default: all)")
    d.add_argument("--models-dir", help="where to put them (default: $TINY_GRAPHRAG_MODELS or ./models)")
    ls = msub.add_parser("list", help="show where each default model is expected and whether it is there", **kw)
    ls.add_argument("--models-dir", help="where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")
    _add_export_parsers(sub, kw)
    return p


# ---- export and view (one block: the parsers and their handlers) ------------------------------
def _add_export_parsers(sub, kw) -> None:
    from .export import FORMATS

    x = sub.add_parser("export", help="write an index as GraphML, GEXF, JSON node-link, GraphRAG parquet or "
                                      "Neo4j CSV + Cypher", **kw)
    x.add_argument("index", help="an index folder written by build")
    x.add_argument("--format", required=True, choices=FORMATS,
                   help="graphml/gexf/json: one file; parquet/neo4j: a folder of files")
    x.add_argument("--out", required=True, type=Path, help="the file (or folder) to write")
    x.add_argument("--force", action="store_true", help="replace an existing export (nothing else is touched)")
    v = sub.add_parser("view", help="write one offline HTML page to explore the graph and its communities", **kw)
    v.add_argument("index", help="an index folder written by build")
    v.add_argument("--level", type=_int_at_least(0), default=0, help="community level that colours the entities")
    v.add_argument("--top", type=_int_at_least(1), default=200, help="show the N entities with the most relations")
    v.add_argument("--community", help="show only this community's entities (an id from `info`)")
    v.add_argument("--out", type=Path, default=Path("graph.html"), help="the HTML file to write")
    v.add_argument("--force", action="store_true", help="replace an existing file at --out")


def _export(args) -> int:
    from .export import export_index

    for path in export_index(args.index, args.format, args.out, force=args.force):
        print(path)
    return 0


def _view(args) -> int:
    from .view import write_view

    print(write_view(args.index, args.out, level=args.level, top=args.top, community=args.community,
                     force=args.force))
    return 0


def _build(args) -> int:
    from .build import build_index  # loads the pipeline's modules: not needed for --help or info

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
    ch = cfg.chunking
    max_tokens = ch.max_tokens if args.max_tokens is None else args.max_tokens
    overlap = ch.overlap_tokens if args.overlap is None else args.overlap
    if overlap >= max_tokens:
        given = "" if args.overlap is not None else f" (the default; pass --overlap N with N < {max_tokens})"
        raise ConfigError(f"--overlap {overlap}{given} must be less than --max-tokens {max_tokens}")
    ch = replace(ch, max_tokens=max_tokens, overlap_tokens=overlap)
    llm = replace(cfg.llm, **{k: v for k, v in {"model": args.llm, "chat_format": args.chat_format, "n_ctx": args.n_ctx,
                                        "max_report_tokens": args.report_max_tokens,
                                        "report_context_tokens": args.report_context_tokens,
                                        "report_min_size": args.report_min_size}.items() if v is not None})
    com = replace(cfg.communities, **({} if args.max_cluster_size is None else {"max_cluster_size": args.max_cluster_size}))
    cfg = replace(cfg, extraction=ex, chunking=ch, llm=llm, communities=com, reports=not args.no_reports,
                  tree=replace(cfg.tree, enabled=args.tree),
                  models_dir=args.models_dir, **({"embedder_model": args.embedder} if args.embedder else {}))
    result = build_index(args.inputs, args.out, schema=args.schema, config=cfg, progress=True, force=args.force)
    if args.json:
        print(json.dumps(result.summary.to_dict(), indent=2))
    else:
        print(f"index: {result.path}")
        print(result.summary.format())
    return 0


def index_info(path: str | Path, top: int = 5) -> dict:
    """Documents, chunks, entities, relations, community levels and the top reports of an index."""
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
        # reports built from the data because the model's output was unusable
        "fallback_reports": sum(1 for r in reports if r.fallback),
        "skipped_files": list((m.get("summary") or {}).get("skipped_files", [])),
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
        "tree": m.get("tree"),  # None: built without a RAPTOR tree
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
    if info["fallback_reports"]:
        print(f"reports: {c.get('reports')}, of which {info['fallback_reports']} fallback (the model's output was "
              "unusable: they list the community's data)")
    for lvl in info["levels"]:
        print(f"level C{lvl['level']}: {lvl['communities']} communities, size {lvl['min_size']}-{lvl['max_size']} "
              f"(mean {lvl['mean_size']})")
    for r in info["top_reports"]:
        print(f"  [{r['rating']:.1f}] {r['title']} ({r['community']}, C{r['level']})")
    _print_tree(info["tree"])
    return 0


def _print_tree(tree: dict | None) -> None:
    if not tree:
        print("tree: none (build with --tree for `query tree`)")
        return
    layers = ", ".join(f"L{k}={v}" for k, v in sorted(tree["nodes_per_layer"].items(), key=lambda x: int(x[0])))
    print(f"tree: nodes per layer {layers} (L0 = chunks); summary tokens: {tree['summary_tokens']}; "
          f"LLM calls: {tree['llm_calls']} (+{tree['llm_cached']} from the cache)"
          + (f"; {tree['fallback_summaries']} extracted (no usable summary)" if tree["fallback_summaries"] else ""))
    if tree.get("note"):
        print(f"  note: {tree['note']}")


def _query(args) -> int:
    from .search.engine import QueryEngine

    if args.level is not None and args.mode != "global":
        raise InputError("--level is only for global search")
    if args.strategy is not None and args.mode != "tree":
        raise InputError("--strategy is only for tree search")
    qe = QueryEngine(args.index, models_dir=args.models_dir)
    _change_llm(qe, model=args.llm, chat_format=args.chat_format, n_ctx=args.n_ctx)
    kwargs = {"level": args.level} if args.mode == "global" else {}
    if args.mode == "tree":
        kwargs = {"strategy": args.strategy}
    stream = args.stream and not args.json and not args.only_context
    result = getattr(qe, f"{args.mode}_search")(args.question, only_context=args.only_context, stream=stream, **kwargs)
    if args.show_context or args.only_context:
        print("----- context -----")
        print(result.context)
        if args.only_context:
            return 0
        print("----- answer -----")
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    elif stream:
        for piece in result:  # the answer as the model writes it
            print(piece, end="", flush=True)
        print()
        result = result.result
    else:
        print(result.answer)  # citations checked: ids that are not in the context were removed
    if not args.json:
        _print_citations(result)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if result.invalid_citations and not args.json:
        removed = "; ".join(f"{kind.capitalize()} ({', '.join(map(str, ids))})"
                            for kind, ids in result.invalid_citations.items())
        print(f"note: removed citations of ids that are not in the context: {removed}", file=sys.stderr)
    return 0


def _print_citations(result) -> None:
    """What each cited id points at, so a reader can check the answer against its sources."""
    src = result.sources
    label = {  # kind -> id -> what to print for it
        "sources": {c.id: f"{Path(c.source).name or c.doc_id} chars {c.start}-{c.end}: \"{_snippet(c.text)}\""
                    for c in src.chunks},
        "reports": {r.id: f"{r.title} (community {r.community_id}, level {r.level})" for r in src.reports},
        **({"reports": {r.id: f"tree {r.title}, covering Sources ({', '.join(map(str, covers[r.id]))})"
                        for r in src.reports}} if (covers := result.details.get("summaries")) is not None else {}),
        "entities": {e.id: f"{e.name} ({e.type})" for e in src.entities},
        "relationships": {r.id: f"{r.head} -{r.label}-> {r.tail}" for r in src.relationships},
    }
    lines = [f"  [{kind.capitalize()} {i}] {label[kind][i]}"
             for kind, ids in result.citations().items() for i in ids if i in label.get(kind, {})]
    if lines:
        print("cited:")
        print("\n".join(lines))


def _snippet(text: str, n: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _evaluate(args) -> int:
    from .evaluation import evaluate, open_judge, read_questions
    from .search.engine import QueryEngine

    if args.out is not None and args.out.exists():
        raise InputError(f"--out {args.out} exists: choose a new file name (nothing is overwritten)")
    questions = read_questions(args.questions_file) if args.questions_file else args.questions
    with QueryEngine(args.index, models_dir=args.models_dir) as qe:
        _change_llm(qe, model=args.llm)
        judge = open_judge(args.judge, qe, n_ctx=args.n_ctx, chat_format=args.chat_format)
        result = evaluate(qe, judge, questions=questions, a=args.a, b=args.b, source=args.source,
                          description=args.description, answer_tokens=args.answer_tokens)
    data = json.dumps(result.to_dict(), indent=2, ensure_ascii=False)
    if args.out:
        args.out.write_text(data + "\n", encoding="utf-8")
    print(data if args.json else result.format())
    return 0


def _change_llm(qe, **given: object) -> None:
    """The index's build LLM settings with what was given on the command line."""
    changes = {k: v for k, v in given.items() if v is not None}
    if changes:
        qe.change_llm_settings(**changes)


def _models(args) -> int:
    from .models import download_models, model_status

    if args.models_command == "download":
        for path in download_models(args.only, models_dir_=args.models_dir):
            print(f"downloaded {path}")
        return 0
    rows = model_status(args.models_dir)
    for row in rows:
        print(row)
    return 1 if any(row.bad_files for row in rows) else 0


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return {"build": _build, "info": _info, "query": _query, "evaluate": _evaluate, "models": _models,
                "export": _export, "view": _view}[args.command](args)
    except TinyGraphRAGError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`info --json | head`): stop quietly, and keep Python from
        # complaining again while it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("interrupted: nothing was published; rerun the same command to resume from the cache", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
