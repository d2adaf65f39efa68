"""The command line: a thin layer over build_index, IndexStore, QueryEngine and download_models."""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import sys
from contextlib import closing, suppress
from dataclasses import replace
from pathlib import Path

from tiny_graphrag.cli.parser import build_parser
from tiny_graphrag.config import BuildConfig
from tiny_graphrag.errors import ConfigError, InputError, OutputError, TinyGraphRAGError
from tiny_graphrag.outputs.info import index_info
from tiny_graphrag.search.config import GlobalConfig

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # what `shown` escapes


def _export(args) -> None:
    from tiny_graphrag.outputs.export import export_index

    for path in export_index(args.index, args.format, args.out, force=args.force):
        print(path)


def _view(args) -> None:
    from tiny_graphrag.outputs.view import write_view

    print(write_view(args.index, args.out, level=args.level, top=args.top, community=args.community, force=args.force))


def _serve(args) -> int:
    from tiny_graphrag.serve.cli import run

    return run(args)


def _build(args) -> None:
    from tiny_graphrag.indexing.pipeline import (
        build_index,  # loads the pipeline's modules: not needed for --help or info
    )

    cfg = build_config(args)
    executor = None
    if args.ray is not None:
        from tiny_graphrag.extract.ray_executor import RayExecutor

        executor = RayExecutor(
            args.ray or None, concurrency=args.ray_actors, batch_size=cfg.extraction.batch_size, num_gpus=args.ray_gpus
        )
    result = build_index(
        args.inputs, args.out, schema=args.schema, config=cfg, force=args.force, sync=args.sync, executor=executor
    )
    _print_summary(result, args.json)


def build_config(args) -> BuildConfig:
    """The BuildConfig with the fields the options given set (`args.config.<section>.<name>`, see parser.py)."""
    given = {k[len("config.") :]: v for k, v in vars(args).items() if k.startswith("config.") and v is not None}
    ch, cfg = BuildConfig().chunking, BuildConfig()
    max_tokens = given.get("chunking.max_tokens", ch.max_tokens)
    overlap = given.get("chunking.overlap_tokens", ch.overlap_tokens)
    if overlap >= max_tokens:  # named by the flags, not by the config's fields
        default = (
            "" if "chunking.overlap_tokens" in given else f" (the default; pass --overlap N with N < {max_tokens})"
        )
        raise ConfigError(f"--overlap {overlap}{default} must be less than --max-tokens {max_tokens}")
    sections: dict[str, dict] = {}
    for key, value in given.items():
        section, _, name = key.rpartition(".")
        sections.setdefault(section, {})[name] = value
    top = sections.pop("", {})
    return replace(cfg, **top, **{name: replace(getattr(cfg, name), **kw) for name, kw in sections.items()})


def _update(args) -> None:
    from tiny_graphrag.indexing.update import load_index  # loads the pipeline's modules

    with closing(load_index(args.index)) as index:
        if args.command == "add":
            result = index.add(args.inputs, progress=True)
        else:
            result = index.remove(args.documents, progress=True)
    _print_summary(result, args.json)


def _print_summary(result, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result.summary.to_dict(), indent=2))
    else:
        print(f"index: {result.path}")
        print(result.summary.format())


def _info(args) -> None:
    info = index_info(args.index, args.top)
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
        return
    c = info["counts"]
    print("index {index} (format {format_version}, built {created} by {library_version})".format_map(info))
    print(
        f"documents: {c.get('documents')}  chunks: {c.get('chunks')}  entities: {c.get('entities')}  "
        f"relations: {c.get('relations')}  merged aliases: {info['merged_aliases']}"
    )
    for what, counts in (("entity", info["entities_per_type"]), ("relation", info["relations_per_label"])):
        for t, n in sorted(counts.items(), key=lambda x: -x[1]):
            print(f"  {what} {t}: {n}")
    if info["fallback_reports"]:
        print(
            f"reports: {c.get('reports')}, of which {info['fallback_reports']} fallback (the model's output was "
            "unusable: they list the community's data)"
        )
    for lvl in info["levels"]:
        print(
            "level C{level}: {communities} communities, size {min_size}-{max_size} (mean {mean_size})".format_map(lvl)
        )
    for r in info["top_reports"]:
        print(f"  [{r['rating']:.1f}] {r['title']} ({r['community']}, C{r['level']})")
    tree = info["tree"]
    if not tree:
        print("tree: none (build with --tree for `query tree`)")
        return
    layers = ", ".join(f"L{k}={v}" for k, v in sorted(tree["nodes_per_layer"].items(), key=lambda x: int(x[0])))
    print(
        f"tree: nodes per layer {layers} (L0 = chunks); summary tokens: {tree['summary_tokens']}; "
        f"LLM calls: {tree['llm_calls']} (+{tree['llm_cached']} from the cache)"
        + (f"; {tree['fallback_summaries']} extracted (no usable summary)" if tree["fallback_summaries"] else "")
    )
    if tree.get("note"):
        print(f"  note: {tree['note']}")


def global_config(config: GlobalConfig, args) -> GlobalConfig:
    """Global search's settings with the query command's options applied."""
    given = {"source": args.over, "dynamic_map_calls": args.map_calls}
    return replace(config, **{k: v for k, v in given.items() if v is not None})


def _query(args) -> None:
    from tiny_graphrag.search.config import SearchConfig
    from tiny_graphrag.search.engine import QueryEngine

    given = [k for k in ("level", "over", "map_calls") if getattr(args, k) is not None]
    if args.mode != "global" and given:
        raise InputError(f"{', '.join('--' + k.replace('_', '-') for k in given)}: only for global search")
    if args.strategy is not None and args.mode != "tree":
        raise InputError("--strategy is only for tree search")
    if args.where and args.mode not in ("local", "naive"):
        raise InputError("--where filters the text that local and naive search read; use one of those modes")
    config = SearchConfig(context_tokens=args.context_tokens, reader=args.reader or "auto")
    # The answer's own tokens plus the prompt's instructions must fit: below that, any query, even a
    # short one, would be refused as "too long" by the engine.
    if args.n_ctx is not None and args.n_ctx < config.answer_max_tokens + 128:
        raise ConfigError(
            f"--n-ctx {args.n_ctx} is too small for any query: the answer alone may take {config.answer_max_tokens} "
            "tokens, and the prompt's instructions and data need more. To fix: use --n-ctx 1024 or more "
            "(builds default to 4096)"
        )
    qe = QueryEngine(args.index, models_dir=args.models_dir, config=config)
    llm = {"model": args.llm, "chat_format": args.chat_format, "n_ctx": args.n_ctx}
    if changes := {k: v for k, v in llm.items() if v is not None}:
        qe.change_llm_settings(**changes)  # the index's build LLM settings, but for these
    kwargs = {
        "global": {"level": args.level, "config": global_config(config.global_, args)},
        "tree": {"strategy": args.strategy},
    }.get(args.mode, {"where": args.where} if args.where else {})  # pairs: a key given twice is refused
    stream = args.stream and not args.json and not args.only_context
    result = getattr(qe, f"{args.mode}_search")(args.question, only_context=args.only_context, stream=stream, **kwargs)
    if (args.show_context or args.only_context) and not args.json:  # --json holds the context
        if "considered" in result.details:
            print("----- selection -----")
            for c in result.details["considered"]:
                print(
                    f"{c['why']:>36}  [Reports {c['report']}] {shown(c['title'])} (level {c['level']}, cosine {c['similarity']:.2f})"
                )
        print("----- context -----")
        print(shown(result.context))
        if args.only_context:
            _print_notes(result)  # e.g. a budget the window could not hold
            return
        print("----- answer -----")
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    elif stream:
        for piece in result:  # the answer as the model writes it
            print(shown(piece), end="", flush=True)
        print()
        result = result.result
    else:
        print(shown(result.answer))  # citations checked: ids that are not in the context were removed
    if not args.json:
        _print_citations(result)
    _print_notes(result)
    if result.invalid_citations and not args.json:
        removed = "; ".join(
            f"{kind.capitalize()} ({', '.join(map(str, ids))})" for kind, ids in result.invalid_citations.items()
        )
        print(f"note: removed citations of ids that are not in the context: {removed}", file=sys.stderr)


def _print_notes(result) -> None:
    for note in result.notes:
        print(f"note: {shown(note)}", file=sys.stderr)


def _print_citations(result) -> None:
    """What each cited id points at, so a reader can check the answer against its sources."""
    src = result.sources
    label = {  # kind -> id -> what to print for it
        "sources": {
            c.id: f'{c.location}{f" ({c.about})" if c.about else ""}: "{_snippet(c.text)}"' for c in src.chunks
        },
        "reports": {r.id: r.label(result.details.get("summaries")) for r in src.reports},
        "entities": {e.id: f"{e.name} ({e.type})" for e in src.entities},
        "relationships": {r.id: f"{r.head} -{r.label}-> {r.tail}" for r in src.relationships},
    }
    lines = [
        f"  [{kind.capitalize()} {i}] {label[kind][i]}"
        for kind, ids in result.citations().items()
        for i in ids
        if i in label.get(kind, {})
    ]
    if lines:
        print("cited:", *map(shown, lines), sep="\n")


def shown(text: str) -> str:
    """Text from documents (or a model that read them) for the terminal: its control characters (an
    ANSI escape, a carriage return) and bidirectional overrides are printed as escapes, never acted on."""
    return _CONTROL.sub(lambda m: ascii(m[0])[1:-1], text)


def _snippet(text: str, n: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _evaluate(args) -> None:
    from tiny_graphrag.evaluation.head_to_head import evaluate, open_judge
    from tiny_graphrag.evaluation.questions import read_questions
    from tiny_graphrag.search.engine import QueryEngine

    if args.out is not None:
        _check_new_file(args.out)  # now: a bad --out must not cost the whole evaluation
    questions = read_questions(args.questions_file) if args.questions_file else args.questions
    with QueryEngine(args.index, models_dir=args.models_dir) as qe:
        if args.llm is not None:
            qe.change_llm_settings(model=args.llm)
        judge = open_judge(args.judge, qe, n_ctx=args.n_ctx, chat_format=args.chat_format)
        options = {k: getattr(args, k) for k in ("a", "b", "source", "description", "answer_tokens")}
        result = evaluate(qe, judge, questions=questions, **options)
    data = json.dumps(result.to_dict(), indent=2, ensure_ascii=False)
    print(data if args.json else result.format())  # first: the results are on screen whatever happens to --out
    if args.out:
        from tiny_graphrag.outputs.export import write_atomic

        write_atomic(args.out, lambda fh: fh.write(data + "\n"))


def _check_new_file(out: Path) -> None:
    """An --out that names a new file in an existing folder we can write to, or OutputError."""
    if out.exists() or out.is_symlink():
        raise OutputError(f"--out {out} exists: choose a new file name (nothing is overwritten)")
    folder = out.parent
    if not folder.is_dir():
        raise OutputError(
            f"--out {out}: the folder {folder} does not exist{' (it is a file)' if folder.exists() else ''}. To "
            f"fix: create it first (mkdir -p {folder}) or choose another path; nothing was run"
        )
    if not os.access(folder, os.W_OK):
        raise OutputError(f"--out {out}: the folder {folder} is not writable. To fix: choose another path")


def _models(args) -> int:
    from tiny_graphrag.backends.files import download_models, model_status

    if args.models_command in ("finetune", "evaluate"):
        from tiny_graphrag.finetune.cli import run

        return run(args)
    if args.models_command == "download":
        for path in download_models(args.only, models_dir_=args.models_dir):
            print(f"downloaded {path}")
        return 0
    rows = model_status(args.models_dir)
    for row in rows:
        print(row)
    return 1 if any(row.bad_files for row in rows) else 0


def _silence_stdout() -> None:
    with suppress(OSError, ValueError):  # no file descriptor (a captured stdout): nothing to silence
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = logging.INFO if getattr(args, "verbose", False) else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    try:  # a command returns its exit status, None for success
        code = {
            "build": _build,
            "add": _update,
            "remove": _update,
            "info": _info,
            "query": _query,
            "evaluate": _evaluate,
            "models": _models,
            "export": _export,
            "view": _view,
            "serve": _serve,
        }[args.command](args) or 0
        sys.stdout.flush()  # here, not at exit: a full disk or closed pipe is reported like any error
        return code
    except TinyGraphRAGError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`info --json | head`): stop quietly, and keep Python from
        # complaining again while it flushes stdout at exit.
        _silence_stdout()
        return 141
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        # Writing the output failed (e.g. `info > /dev/full`); our own files report this themselves.
        _silence_stdout()  # no second complaint while Python flushes stdout at exit
        print(
            f"error: cannot write the output ({exc.strerror}{f': {exc.filename}' if exc.filename else ''}). "
            "To fix: free some disk space, or send the output elsewhere",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        resume = "nothing was published; rerun the same command to resume from the cache"
        said = {"query": "the question was not answered; a query only reads the index, so nothing changed"}
        print(f"interrupted: {said.get(args.command, resume)}", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
