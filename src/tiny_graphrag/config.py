"""Typed configuration for every stage. Defaults are explained next to each value."""

from __future__ import annotations

import argparse
import dataclasses
import math
import numbers
import operator
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from tiny_graphrag.errors import ConfigError

# The library's version (pyproject.toml reads it from here); every index records the one that built it.
VERSION = "0.7.13"


T = TypeVar("T")
_COMPARE = {"[": operator.le, "(": operator.lt, "]": operator.ge, ")": operator.gt, ">=": operator.ge, ">": operator.gt}


def allowed(default: T, rule: str | tuple[str | None, ...]) -> T:
    """A field with a default and a rule its value must keep to (checked by `Checked`): a tuple
    of choices, or a range as the error shows it: "[lo, hi)" (brackets as in mathematics) or
    ">= x" / "> x", before " or None" to allow None. The field's type is checked apart, by its annotation."""
    return field(default=default, metadata={"rule": rule})


def _keeps_to(rule: str | tuple[str | None, ...], value: Any) -> bool:
    if isinstance(rule, tuple):
        return value in rule
    if value is None:
        return rule.endswith(" or None")
    spec = rule.removesuffix(" or None")
    if m := re.fullmatch(r"([\[(])(\S+), (\S+)([\])])", spec):
        return bool(_COMPARE[m[1]](float(m[2]), value) and _COMPARE[m[4]](float(m[3]), value))
    op, bound = spec.split()
    return bool(_COMPARE[op](value, float(bound)))


_KINDS = {
    int: "an integer",
    float: "a number",
    str: "a string",
    bool: "True or False",
    tuple: "a tuple",
    dict: "a dict",
    type(None): "None",
}
_HINTS: dict[type, dict[str, Any]] = {}  # each class's annotations, resolved once (it evaluates their strings)


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _alternatives(hint: Any) -> tuple[Any, ...]:
    union = isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
    return typing.get_args(hint) if union else (hint,)


def _has_type(hint: Any, value: Any) -> bool:
    """Whether `value` is of a field's declared type: a number is not a bool; tuples and dicts are
    checked as such, not their items."""
    for kind in _alternatives(hint):
        if kind is int:
            ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        elif kind is float:
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        else:
            ok = isinstance(value, typing.get_origin(kind) or kind)
        if ok:
            return True
    return False


def _fault(hint: Any, rule: str | tuple[str | None, ...] | None, value: Any) -> str | None:
    """What a field's value must be ("must be an integer", "must be in [0, 1]") when its type or
    its rule refuses `value`; None when it keeps to both."""
    if not _has_type(hint, value):
        kinds = [_KINDS.get(typing.get_origin(k) or k) or f"{k.__name__}(...)" for k in _alternatives(hint)]
        return f"must be {' or '.join(kinds)}"
    if isinstance(value, float) and math.isnan(value):
        return "must be a number, not NaN"  # it compares False with every threshold: it would switch one off
    if rule is None or _keeps_to(rule, value):
        return None
    shown = f"{', '.join(map(repr, rule[:-1]))} or {rule[-1]!r}" if isinstance(rule, tuple) else rule
    return f"must be {'in ' if shown[0] in '[(' else ''}{shown}"


class Checked:
    """Settings whose fields' types and rules (`allowed`) are checked on creation: a ConfigError
    names the first field of the wrong type or breaking its rule, and what it must be."""

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if fault := _fault(hints[f.name], f.metadata.get("rule"), value):
                raise ConfigError(f"{type(self).__name__}.{f.name} {fault}, got {value!r}")


def number_option(kind: type, rule: str | None, hint: Any = None) -> Callable[[str], Any]:
    """An argparse `type`: the text read as `kind` (int or float) and checked by `rule` (written as
    for `allowed`); argparse's error names the option ("argument --top: must be >= 0, got -1")."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {_KINDS[kind]}, got {text!r}") from None
        if fault := _fault(hint or kind, rule, value):
            raise argparse.ArgumentTypeError(f"{fault.removesuffix(' or None')}, got {value!r}")
        return value

    return parse


def option_type(cls: type[Checked], name: str) -> Callable[[str], Any]:
    """The argparse `type` of field `name` of `cls`: for a number, its range checked, so a command
    line refuses what the class would ("argument --lr: must be in (0, 1], got 0.0"); else `str`."""
    field_ = next(f for f in fields(cls) if f.name == name)  # type: ignore[arg-type]
    hint = _hints(cls)[name]
    kind = next((k for k in _alternatives(hint) if k in (int, float)), None)
    return number_option(kind, field_.metadata.get("rule"), hint) if kind else str


@dataclass(frozen=True)
class ChunkingConfig(Checked):
    # GLiNER/GLiREL read at most 384 words (their max_len); 256 word tokens leaves room for the
    # prompt labels and gives relation models whole paragraphs of context. The seed's 200
    # characters (~35 words, 1-2 sentences) cut most head/tail pairs apart. See bench/RESULTS.md.
    max_tokens: int = allowed(256, ">= 8")
    overlap_tokens: int = 32  # whole sentences, up to this many tokens, repeated between chunks

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.overlap_tokens < self.max_tokens:
            raise ConfigError(
                f"ChunkingConfig.overlap_tokens must be in [0, max_tokens={self.max_tokens}), got {self.overlap_tokens}"
            )


@dataclass(frozen=True)
class ExtractionConfig(Checked):
    extractor: str = "gliner"  # "gliner" (GLiNER + GLiREL) or "spacy"
    gliner_model: str = "gliner_mediumv2.1"  # folder name under the models dir, or a path
    glirel_model: str = "glirel-large-v0"
    spacy_model: str = "en_core_web_sm"  # an installed spaCy package or a path
    # spaCy label -> user entity type; None means the built-in OntoNotes mapping for "general".
    spacy_label_map: dict[str, str] | None = None
    entity_threshold: float | None = allowed(None, "[0, 1] or None")  # None: the model's recorded one, else 0.5
    relation_threshold: float = allowed(0.5, "[0, 1]")
    batch_size: int = allowed(8, ">= 1")
    device: str | None = None  # None: CUDA -> MPS -> CPU
    half_precision: bool = True  # fp16 on CUDA only
    cooccurrence_relation: str = "related to"  # label used by the co-occurrence fallback
    # "int8": GLiNER/GLiREL linear layers as dynamic int8 on CPU. Faster, but scores move a
    # little (agreement with fp32 in bench/RESULTS.md), so fp32 stays the default.
    quantize: str | None = allowed(None, (None, "int8"))
    # "onnx": the models' encoders run by ONNX Runtime on the CPU (same weights, same predictions
    # to float rounding; faster on CPU, see bench/RESULTS.md). "torch": PyTorch runs them all.
    runtime: str = allowed("torch", ("torch", "onnx"))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.runtime == "onnx" and self.quantize:
            raise ConfigError(
                "ExtractionConfig.runtime 'onnx' and ExtractionConfig.quantize 'int8' cannot be combined. To "
                "fix: choose one (--runtime onnx keeps fp32 predictions; --quantize int8 changes them a little)"
            )


@dataclass(frozen=True)
class ResolutionConfig(Checked):
    enabled: bool = True
    # Conservative: an alias merges only inside one type and only when both a string rule and
    # (when an embedder is present) embedding similarity agree.
    embedding_threshold: float = allowed(0.6, "[0, 1]")
    string_threshold: float = allowed(0.9, "[0, 1]")  # difflib ratio for near-identical spellings


@dataclass(frozen=True)
class CommunityConfig(Checked):
    max_cluster_size: int = allowed(10, ">= 1")  # as in GraphRAG's default hierarchical Leiden
    seed: int = 0xDEADBEEF
    resolution: float = allowed(1.0, "> 0")
    # Added to the link between two entities for each chunk that names both (clustering only; 0: relations alone).
    chunk_weight: float = allowed(0.1, ">= 0")


@dataclass(frozen=True)
class LLMConfig(Checked):
    model: str = "Llama-3.2-3B-Instruct-Q4_K_M.gguf"  # file under the models dir, or a path
    chat_format: str | None = None  # None: the template stored in the GGUF
    n_ctx: int = allowed(4096, ">= 256")
    n_gpu_layers: int | None = None  # None: -1 when llama.cpp has GPU offload, else 0
    n_threads: int | None = None  # generation threads; None: one per CPU core (gguf.generation_threads)
    seed: int = 0
    # No temperature: reports and answers decode greedily, which replaying them from the call
    # cache (and one cache key for `stream` and `complete`) relies on.
    max_report_tokens: int = allowed(800, ">= 1")
    # Context per report; None: what n_ctx leaves after the output. Smaller is faster on a CPU.
    report_context_tokens: int | None = allowed(None, ">= 1 or None")
    # Communities of fewer entities get no report (1: every community, as in GraphRAG). Each
    # report is a model call; on a CPU, skipping the smallest communities saves most of the build.
    report_min_size: int = allowed(1, ">= 1")


@dataclass(frozen=True)
class TreeConfig(Checked):
    """RAPTOR's tree of recursive summaries (Sarthi et al. 2024; parthsarthi03/raptor's defaults).

    Off by default: every cluster is a model call, and on 2 CPU cores the tree adds about as much build time as the
    community reports (bench/tree.py, bench/RESULTS.md)."""

    enabled: bool = False
    reduction_dim: int = allowed(10, ">= 2")  # UMAP components (RAPTOR's reduction_dimension)
    threshold: float = allowed(0.1, "[0, 1]")  # soft assignment: a node joins every cluster above this probability
    max_clusters: int = allowed(50, ">= 1")  # BIC tries 1..this many Gaussian components (RAPTOR: 50)
    max_layers: int = allowed(5, ">= 1")
    stop_nodes: int = allowed(10, ">= 1")  # no layer above one of at most this many nodes (RAPTOR: reduction_dim + 1)
    # Text per summary prompt; an over-budget cluster is clustered again. RAPTOR used 3,500 with
    # 4k+ windows; less keeps a CPU's prompt processing short and fits n_ctx=4096 with room.
    cluster_tokens: int = allowed(2000, ">= 64")
    # Output per summary: RAPTOR's summarization_length. A cut-off one is asked again with 64 more; the small offline
    # models rarely finish even then, and a longer limit did not save calls (bench/RESULTS.md, "RAPTOR trees").
    summary_tokens: int = allowed(100, ">= 8")
    seed: int = 224  # RAPTOR's RANDOM_SEED: UMAP and the mixture are seeded, so a rebuild is identical


@dataclass(frozen=True)
class DocumentsConfig(Checked):
    """How tables (CSV, JSON Lines, JSON, Parquet) are read: one document per row, as GraphRAG's
    input options. Other columns become the document's metadata."""

    text_columns: tuple[str, ...] = ()  # joined in this order; (): the column "text"
    title_column: str | None = None  # its value titles the row (embedded with it, shown in citations)
    max_unpacked_mb: int = allowed(100, ">= 1")  # the most one DOCX/Parquet file may unpack to: a zip bomb is refused

    def __post_init__(self) -> None:  # a manifest stores a list, a caller may pass one name
        cols = self.text_columns
        cols = (cols,) if isinstance(cols, str) else tuple(cols) if isinstance(cols, (list, tuple)) else cols
        object.__setattr__(self, "text_columns", cols)
        super().__post_init__()


@dataclass(frozen=True)
class BuildConfig(Checked):
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    extraction: ExtractionConfig = field(default_factory=ExtractionConfig)
    resolution: ResolutionConfig = field(default_factory=ResolutionConfig)
    communities: CommunityConfig = field(default_factory=CommunityConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    embedder_model: str = "all-MiniLM-L6-v2"
    models_dir: str | None = None  # None: $TINY_GRAPHRAG_MODELS or ./models
    cache_dir: str | None = None  # None: the index's own cache folder, <out_dir parent>/.<out_dir name>.cache
    reports: bool = True  # write community reports with the LLM (needs llama-cpp-python)
    tree: TreeConfig = field(default_factory=TreeConfig)  # RAPTOR summaries (off by default: see TreeConfig)
    documents: DocumentsConfig = field(default_factory=DocumentsConfig)  # how table files are read


_C = TypeVar("_C")


def from_dict(cls: type[_C], data: dict[str, Any]) -> _C:
    """A config dataclass from its stored dict (a manifest's): nested sections are rebuilt, keys it
    does not know are ignored, fields the dict lacks (newer than the index) keep their defaults."""
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            continue
        value = data[f.name]
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(default) and isinstance(value, dict):
            value = from_dict(type(default), value)
        kwargs[f.name] = value
    return cls(**kwargs)
