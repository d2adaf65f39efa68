"""The command line's arguments: every subcommand, its options, their types and help."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from tiny_graphrag.config import LLMConfig, number_option, option_type
from tiny_graphrag.search.config import GlobalConfig, SearchConfig


def _whole(low: int) -> Callable[[str], Any]:
    """An argparse type for a whole number of at least `low`, worded as every setting's range."""
    return number_option(int, f">= {low}")


def _key_value(text: str) -> tuple[str, str]:
    parts = re.split(r"(?<!\\)=", text, maxsplit=1)  # KEY ends at the first = not written \= (a key may hold =)
    if len(parts) < 2 or not parts[0].strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. year=2021; an = in KEY written \\=), got {text!r}")
    return parts[0].strip().replace("\\=", "="), parts[1].strip()


def _device(text: str) -> str:
    if not re.fullmatch(r"cpu|cuda(:\d+)?|mps", text):
        raise argparse.ArgumentTypeError(f"expected cpu, cuda, cuda:N or mps, got '{text}'")
    return text


def _config_option(parser: argparse.ArgumentParser) -> Callable[..., None]:
    """`add(field, help, type, flag=None, **kw)` for an option that sets a BuildConfig field ("section.name" or "name";
    the flag is --name with dashes unless given): its value is `args.config.<field>`, None when not given
    (commands.build_config reads them), and its help ends with the config's default unless it names its own."""
    from tiny_graphrag.config import BuildConfig

    defaults = BuildConfig()

    def add(field: str, help: str, type: Any = None, flag: str | None = None, **kw: Any) -> None:
        section, _, name = field.rpartition(".")
        owner = getattr(defaults, section) if section else defaults  # the settings object holding the field
        default = getattr(owner, name)
        flag = flag or "--" + name.replace("_", "-")
        if type is None and "action" not in kw:
            type = option_type(owner.__class__, name)  # a number's range: the config's own rule
        if "default" not in help and default is not None and not isinstance(default, bool):
            help += f" (default: {default})"
        if "choices" not in kw and kw.get("action") not in ("store_false", argparse.BooleanOptionalAction):
            kw["metavar"] = flag[2:].upper().replace("-", "_")  # argparse's own, not the dest's
        kw |= {"type": type} if type else {}
        parser.add_argument(flag, dest=f"config.{field}", default=None, help=help, **kw)

    return add


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required") and "question" in message:
            # argparse reads a one-word question that starts with "-" as an unknown option
            message += " (a question that starts with '-' needs `--` before it: query MODE --index DIR -- '-QUESTION')"
        super().error(message)


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, but not the "None" of options whose default is decided later."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, argparse.SUPPRESS) or "%(default)" in (action.help or ""):
            return action.help or ""
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    from tiny_graphrag.extract.base import extractor_names

    # -v is accepted before and after the subcommand: a shared parent with a suppressed default
    # keeps the top-level value when the subcommand does not repeat it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log progress details")
    kw: dict[str, Any] = {"parents": [common], "formatter_class": _Formatter}  # for every (sub)parser
    p = _Parser(prog="tiny-graphrag", description="A small, fully local GraphRAG.", **kw)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = sub.add_parser("build", help="build an index from document files or directories", **kw)
    b.add_argument(
        "inputs",
        nargs="+",
        type=Path,
        help="files or directories: text/Markdown, PDF, DOCX, HTML, e-mail (.eml, .mbox), tables (CSV, JSON "
        "Lines, JSON, Parquet: one document per row); PDF/DOCX/HTML need `pip install 'tiny-graphrag[documents]'`",
    )
    b.add_argument(
        "--out",
        required=True,
        type=Path,
        help="index folder, e.g. graphs/NAME: new, empty, or an existing index built with the same "
        "settings, which is updated (only new or changed documents cost model calls) and replaced "
        "once the new version is complete; nothing else is ever replaced",
    )
    b.add_argument(
        "--sync",
        action="store_true",
        help="updating an existing index: also remove its documents that are not among the inputs",
    )
    b.add_argument(
        "--force",
        action="store_true",
        help="rebuild an existing index from scratch (e.g. with other settings), and also replace an "
        "unfinished index (index files without a manifest) at --out",
    )
    b.add_argument(
        "--schema",
        help="schema file (.toml/.yaml/.json) or preset name (general, biomedical, finance, "
        "geography; default general)",
    )
    opt = _config_option(b)  # these set a BuildConfig field; the help names the config's default
    opt(
        "documents.text_columns",
        "a table's text column (repeatable: joined in order; default: the column 'text')",
        flag="--text-column",
        action="append",
    )
    opt("documents.title_column", "a table's column that titles each row (others are kept as metadata)")
    opt("documents.max_unpacked_mb", "the most one compressed file (DOCX, Parquet) may unpack to, in MiB")
    opt("extraction.extractor", "entity/relation extractor", choices=extractor_names())
    opt("extraction.spacy_model", "installed spaCy pipeline or path")
    opt("extraction.gliner_model", "GLiNER model folder name under models/ or a path")
    opt("extraction.glirel_model", "GLiREL model folder name under models/ or a path")
    opt("embedder_model", "sentence-transformers model name under models/ or a path", flag="--embedder")
    opt("llm.model", "GGUF file name under models/ or a path, for community reports", flag="--llm")
    opt("llm.chat_format", "llama.cpp chat format, when the GGUF has no template (e.g. gemma)")
    opt("llm.n_ctx", "LLM context window in tokens")
    opt("reports", "skip community reports (no LLM needed)", flag="--no-reports", action="store_false")
    opt(
        "tree.enabled",
        "build a RAPTOR tree of recursive summaries for `query tree` (an LLM call per cluster; needs the 'tree' extra)",
        flag="--tree",
        action=argparse.BooleanOptionalAction,
    )
    opt("llm.max_report_tokens", "output budget per community report", flag="--report-max-tokens")
    opt("llm.report_context_tokens", "context budget per community report (default: what --n-ctx leaves)")
    opt("llm.report_min_size", "communities of fewer entities get no report (default: 1, all)")
    opt("extraction.entity_threshold", "minimum entity score, in [0, 1] (default: the model's recorded one, else 0.5)")
    opt("extraction.relation_threshold", "minimum relation score, in [0, 1]")
    opt("chunking.max_tokens", "chunk size in word tokens")
    opt("chunking.overlap_tokens", "chunk overlap in word tokens, less than --max-tokens", _whole(0), "--overlap")
    opt("communities.max_cluster_size", "largest community before Leiden splits it into the next level")
    opt("extraction.device", "torch device: cpu, cuda, cuda:N or mps (default: cuda, mps, else cpu)", _device)
    opt("models_dir", "where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")
    opt(
        "extraction.quantize",
        "GLiNER/GLiREL linear layers as dynamic int8 on CPU (faster; scores move slightly, see bench/RESULTS.md)",
        choices=["int8"],
    )
    opt(
        "extraction.runtime",
        "run GLiNER/GLiREL's encoders with ONNX Runtime on CPU (same predictions, faster; needs tiny-graphrag[onnx]) or PyTorch",
        choices=["torch", "onnx"],
    )
    b.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="extract and embed on Ray actors: a "
        "cluster's HOST:PORT, or no address for RAY_ADDRESS or a local instance (needs tiny-graphrag[ray])",
    )
    b.add_argument("--ray-actors", type=_whole(1), default=1, help="Ray actors (model copies)")
    b.add_argument(
        "--ray-gpus", type=number_option(float, ">= 0"), default=0.0, help="GPUs per Ray actor (1 on a GPU cluster)"
    )
    b.add_argument("--json", action="store_true", help="print the summary as JSON")

    a = sub.add_parser("add", help="add or re-index documents in an index, with the index's settings", **kw)
    a.add_argument("inputs", nargs="+", type=Path, help="document files or directories of them (as for build)")
    r = sub.add_parser("remove", help="remove documents from an index", **kw)
    r.add_argument("documents", nargs="+", help="document ids or the paths they were indexed from (see info --json)")
    for update in (a, r):
        update.add_argument("--index", required=True, type=Path, help="an index folder written by build")
        update.add_argument("--json", action="store_true", help="print the summary as JSON")

    i = sub.add_parser("info", help="describe a built index", **kw)
    i.add_argument("index", help="an index folder written by build")
    i.add_argument("--top", type=_whole(0), default=5, help="how many top-rated reports to list")
    i.add_argument("--json", action="store_true", help="print as JSON")

    q = sub.add_parser("query", help="ask a question of an index", **kw)
    q.add_argument("mode", choices=["local", "global", "naive", "tree"], help="search mode")
    q.add_argument("question", help="the question, in quotes")
    q.add_argument("--index", required=True, help="an index folder written by build")
    q.add_argument(
        "--level",
        type=option_type(GlobalConfig, "level"),
        help="global search: the deepest community level to select the reports nearest the question from "
        "(default: every level)",
    )
    q.add_argument(
        "--map-calls",
        type=option_type(GlobalConfig, "dynamic_map_calls"),
        help="global search: at most this many map calls (default: 3)",
    )
    q.add_argument(
        "--over",
        choices=["reports", "tree"],
        help="global search: map the community reports or the tree's summaries (default: the reports, "
        "else the tree's summaries)",
    )
    q.add_argument(
        "--strategy",
        choices=["collapsed", "traversal"],
        help="tree search: rank every layer at once (collapsed, the default) or walk down from the top",
    )
    q.add_argument(
        "--reader",
        choices=["auto", "small", "large"],
        help="how the model reads: small (the best sentences, answer-only), large (GraphRAG's whole context "
        "tables and map-reduce); default auto: small for a model under 4B parameters",
    )
    q.add_argument("--show-context", action="store_true", help="print the context the model saw")
    q.add_argument("--only-context", action="store_true", help="build the context without calling the LLM")
    q.add_argument(
        "--where",
        action="append",
        type=_key_value,
        metavar="KEY=VALUE",
        help="local/naive: read only documents with this metadata (repeatable: all must hold), e.g. year=2021; "
        "an = inside KEY is written \\=",
    )
    q.add_argument(
        "--stream",
        action="store_true",
        help="print the answer as it is generated (raw: citations are checked only at the end)",
    )
    q.add_argument("--json", action="store_true", help="print the whole result as JSON")
    q.add_argument("--llm", help="GGUF file name under models/ or a path (default: the one the index was built with)")
    q.add_argument("--chat-format", help="llama.cpp chat format, when the GGUF has no template (e.g. gemma)")
    q.add_argument(
        "--n-ctx", type=option_type(SearchConfig, "n_ctx"), help="LLM context window in tokens (default: the build's)"
    )
    q.add_argument("--models-dir", help="where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")
    q.add_argument(
        "--context-tokens",
        type=option_type(SearchConfig, "context_tokens"),
        help="at most this many tokens of data per prompt (default: what --n-ctx leaves; "
        "a small model answers better from less)",
    )

    e = sub.add_parser(
        "evaluate",
        help="judge two search modes head to head on global questions (GraphRAG paper "
        "§4.1): win rates per criterion and the judge's order agreement",
        **kw,
    )
    e.add_argument("--index", required=True, help="an index folder written by build (with community reports)")
    e.add_argument(
        "--judge",
        help="GGUF file name under models/ or a path, that writes the questions and judges "
        "(default: the index's LLM; a larger model gives a trustworthy judge)",
    )
    e.add_argument("--questions", type=_whole(1), default=8, help="how many questions to generate")
    e.add_argument("--questions-file", type=Path, help="questions to use instead, one per line")
    e.add_argument(
        "--source",
        choices=["personas", "reports"],
        default="personas",
        help="generate questions from personas -> tasks -> questions, or from the top community reports",
    )
    e.add_argument(
        "--description",
        help="a sentence or two describing the corpus, for personas "
        "(default: the documents' openings and top report titles)",
    )
    e.add_argument("--a", default="global", choices=["global", "naive", "local"], help="first search mode")
    e.add_argument("--b", default="naive", choices=["global", "naive", "local"], help="second search mode")
    e.add_argument(
        "--answer-tokens", type=_whole(16), default=700, help="each answer is cut to this many tokens for the judge"
    )
    e.add_argument("--llm", help="GGUF that answers (default: the one the index was built with)")
    e.add_argument("--chat-format", help="llama.cpp chat format of --judge, when the GGUF has no template")
    e.add_argument(
        "--n-ctx", type=option_type(LLMConfig, "n_ctx"), help="judge context window in tokens (default 4096)"
    )
    e.add_argument("--models-dir", help="where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")
    e.add_argument("--out", type=Path, help="also write the whole evaluation (questions, answers, verdicts) as JSON")
    e.add_argument("--json", action="store_true", help="print the whole evaluation as JSON")

    m = sub.add_parser("models", help="list, download, fine-tune or evaluate models", **kw)
    msub = m.add_subparsers(dest="models_command", required=True, metavar="ACTION")
    d = msub.add_parser("download", help="download the default models (needs network access)", **kw)
    d.add_argument("--only", nargs="+", help="model names to fetch (default: all)")
    d.add_argument("--models-dir", help="where to put them (default: $TINY_GRAPHRAG_MODELS or ./models)")
    ls = msub.add_parser("list", help="show where each default model is expected and whether it is there", **kw)
    ls.add_argument("--models-dir", help="where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")
    from tiny_graphrag.finetune.cli import add_parsers as add_finetune_parsers

    add_finetune_parsers(msub, kw)
    from tiny_graphrag.outputs.export import FORMATS

    x = sub.add_parser(
        "export", help="write an index as GraphML, GEXF, JSON node-link, GraphRAG parquet or Neo4j CSV + Cypher", **kw
    )
    x.add_argument("index", help="an index folder written by build")
    x.add_argument(
        "--format", required=True, choices=FORMATS, help="graphml/gexf/json: one file; parquet/neo4j: a folder of files"
    )
    x.add_argument("--out", required=True, type=Path, help="the file (or folder) to write")
    x.add_argument("--force", action="store_true", help="replace an existing export (nothing else is touched)")
    v = sub.add_parser("view", help="write one offline HTML page to explore the graph and its communities", **kw)
    v.add_argument("index", help="an index folder written by build")
    v.add_argument("--level", type=_whole(0), default=0, help="community level that colours the entities")
    v.add_argument("--top", type=_whole(1), default=200, help="show the N entities with the most relations")
    v.add_argument("--community", help="show only this community's entities (an id from `info`)")
    v.add_argument("--out", type=Path, default=Path("graph.html"), help="the HTML file to write")
    v.add_argument("--force", action="store_true", help="replace an existing file at --out")
    from tiny_graphrag.serve.cli import add_parser as add_serve_parser

    add_serve_parser(sub, kw)
    return p
