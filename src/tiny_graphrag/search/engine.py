"""QueryEngine: open an index once, then run local, global, naive and tree searches against it.

    from tiny_graphrag import QueryEngine
    qe = QueryEngine("graphs/obama")
    print(qe.local_search("Who is Michelle Obama?"))
    for piece in qe.global_search("What are the main themes?", stream=True):
        print(piece, end="")

The graph, vectors and embedder are loaded in the constructor; the LLM only when an answer is asked for
(`only_context=True` never loads it). Without a loaded LLM, token budgets are counted with a conservative estimate and
the result says so.

The engine opens the index for search (`self.index`, a read-only SearchIndex), holds the LLM and dispatches: each mode's
flow (retrieve -> context -> model calls -> result) lives in its own module (naive.py, local.py, global_search.py,
tree_search.py) as a function over that index and the run it reports into, so a mode never sees the engine and a new
mode is one module and one method here."""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tiny_graphrag.backends.embed import Embedder, TextEmbedder
from tiny_graphrag.backends.files import choose_device
from tiny_graphrag.backends.llm import LLM, CachedLLM, open_llm
from tiny_graphrag.config import LLMConfig, from_dict
from tiny_graphrag.errors import ConfigError, InputError, ModelNotFoundError, listing
from tiny_graphrag.index.cache import CallCache
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.search.answer import SearchRun
from tiny_graphrag.search.config import (
    SMALL_READER_PARAMS,
    GlobalConfig,
    LocalConfig,
    NaiveConfig,
    SearchConfig,
    TreeSearchConfig,
)
from tiny_graphrag.search.global_search import map_plan, search_global
from tiny_graphrag.search.index import SearchIndex
from tiny_graphrag.search.local import search_local
from tiny_graphrag.search.local_retriever import LocalCandidates
from tiny_graphrag.search.naive import search_naive
from tiny_graphrag.search.result import SearchResult, StreamingResult
from tiny_graphrag.search.tree_search import search_tree

log = logging.getLogger(__name__)


def check_query(query: object) -> str:
    if not isinstance(query, str):
        raise InputError(f"the query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise InputError("the query is empty: ask a question")
    try:  # a byte the terminal's encoding could not decode arrives as a lone surrogate (argv's surrogateescape)
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(query[exc.start])
        what = f"the byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"half a surrogate pair ({code:#x})"
        raise InputError(
            f"the query is not UTF-8 text: character {exc.start} is {what}. To fix: ask in UTF-8 (e.g. a terminal "
            "or question file set to UTF-8)"
        ) from None
    return query.strip()


Where = Mapping[str, str] | Sequence[tuple[str, str]]  # metadata key=value conditions, all of which must hold


def where_filter(where: object) -> dict[str, str]:
    """`where=` as {key: value}: from a mapping or (key, value) pairs, as the command line's repeated --where gives
    them. Every condition must hold: one key with two values is refused (the last value silently counted before)."""
    pairs = list(where.items()) if isinstance(where, Mapping) else where
    if not isinstance(pairs, (list, tuple)) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
        raise InputError(
            f"where= takes a dict of metadata key and value, e.g. where={{'year': '2022'}}, or (key, value) "
            f"pairs; got {where!r:.80}"
        )
    out: dict[str, str] = {}
    for key, value in pairs:
        if out.setdefault(str(key), str(value)) != str(value):
            raise InputError(
                f"the conditions {key}={out[str(key)]} and {key}={value} cannot both hold (every --where/where= "
                f"condition must, and a document has one value per key): give one value for {key!r}"
            )
    return out


class QueryEngine:
    """Searches over one index directory. Not thread-safe (one search at a time)."""

    def __init__(
        self,
        index_dir: str | os.PathLike[str],
        *,
        llm: LLM | LLMConfig | None = None,
        embedder: TextEmbedder | str | os.PathLike[str] | None = None,
        models_dir: str | os.PathLike[str] | None = None,
        config: SearchConfig | None = None,
        device: str | None = None,
        cache: CallCache | None = None,
    ):
        """`llm`: None (the index's LLM settings, loaded on first answer), an LLMConfig, or a ready LLM. `embedder`:
        None (the index's), a model name, or an embedder. `cache`: a CallCache for answers (default: in memory)."""
        if config is not None and not isinstance(config, SearchConfig):
            raise ConfigError(
                f"config must be a SearchConfig (from tiny_graphrag.search.config, e.g. SearchConfig(naive="
                f"NaiveConfig(top_chunks=10))), got the {type(config).__name__} {config!r:.60}"
            )
        t0 = time.perf_counter()
        self.path = Path(index_dir)
        self.store = IndexStore.open(self.path)
        self.config = config or SearchConfig()
        manifest = self.store.manifest
        build_config = manifest.get("config") or {}
        self.models_dir = models_dir if models_dir is not None else build_config.get("models_dir")
        self._cache = cache

        # -- models ---------------------------------------------------------------------------
        if embedder is None or isinstance(embedder, (str, os.PathLike)):
            embedder = self._embedder_for(manifest.get("embedder") or {}, embedder, device)
        self.embedder = embedder
        self._llm: CachedLLM | None = None
        if llm is None or isinstance(llm, LLMConfig):
            self._llm_config = llm if llm is not None else from_dict(LLMConfig, build_config.get("llm") or {})
        else:  # ready-made, counted like any model; the settings are never read then
            self._llm_config = LLMConfig()
            self._llm = llm if isinstance(llm, CachedLLM) else CachedLLM(llm, cache)

        # -- data -----------------------------------------------------------------------------
        self.device = choose_device(device)
        self.index = SearchIndex(self.store, self.embedder, device=self.device, fusion=self.config.fusion)
        self.load_seconds = round(time.perf_counter() - t0, 3)
        log.info("query engine for %s ready in %.1fs", self.path, self.load_seconds)

    def _embedder_for(self, info: dict[str, Any], given: str | os.PathLike[str] | None, device: str | None) -> Embedder:
        if given is not None:
            return Embedder(str(given), models_dir=self.models_dir, device=device)
        try:
            embedder = Embedder(info.get("name") or "all-MiniLM-L6-v2", models_dir=self.models_dir, device=device)
        except ModelNotFoundError:
            if not (info.get("path") and Path(info["path"]).exists()):
                raise
            embedder = Embedder(info["path"], models_dir=self.models_dir, device=device)
        if info.get("fingerprint") and embedder.fingerprint != info["fingerprint"]:
            log.warning(
                "the embedder %s differs from the one that built %s (fingerprint %s, expected %s): "
                "similarities may be off",
                embedder.path,
                self.path,
                embedder.fingerprint,
                info["fingerprint"],
            )
        return embedder

    def _load_llm(self) -> CachedLLM:
        """The index's LLM: the one place a backend is constructed."""
        return open_llm(self._llm_config, models_dir=self.models_dir, cache=self._cache)

    @property
    def llm(self) -> CachedLLM:
        """The LLM, loaded on first use."""
        if self._llm is None:
            self._llm = self._load_llm()
        return self._llm

    @property
    def llm_loaded(self) -> bool:
        return self._llm is not None

    def change_llm_settings(self, **changes: Any) -> None:
        """Load the LLM with these settings changed (`model`, `n_ctx`, `chat_format`, ...), the
        index's build settings otherwise; before the first answer (the model loads then)."""
        if self._llm is not None:
            raise RuntimeError("the LLM is already loaded (or was given ready-made): pass llm= to QueryEngine instead")
        self._llm_config = dataclasses.replace(self._llm_config, **changes)

    def configured(self, config: SearchConfig) -> QueryEngine:
        """This engine with other search settings (`context_tokens`, a mode's config): the same
        opened index and models, nothing reloaded. Load the LLM first (`llm`) to share it.
        `config.fusion` does not apply: the retrievers were built with this engine's."""
        other = copy.copy(self)
        other.config = config
        if self._llm is not None:  # its own call counters (usage), the same model and cache
            other._llm = CachedLLM(self._llm.backend, self._llm.cache)
        return other

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> QueryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def begin(self, mode: str, query: str, *, only_context: bool, where: Where | None = None) -> SearchRun:
        """A run of one search: budgets counted with the LLM's tokenizer, except for `only_context`, which never loads
        the model (it uses the loaded one, or the estimate). `where` (metadata key=value) limits the text it may read to
        the documents that have them. A bad query or an unknown `where` key fails here, before any model loads."""
        query, where = check_query(query), where_filter(where or {})
        keys = self.store.metadata_keys() if where else []
        if unknown := [k for k in where if k not in keys]:
            has = f"its documents' keys are {listing(keys)}" if keys else "its documents have no metadata"
            escape = "; on the command line, write a key's = as \\=" if any("=" in k for k in keys) else ""
            raise InputError(
                f"no document of {self.index.path} has the metadata key {unknown[0]!r} ({has}): filter with one of "
                f"those keys (--where KEY=VALUE, where={{KEY: VALUE}}){escape}"
            )
        loaded = self._llm if only_context else self.llm
        run = SearchRun(
            mode,
            query,
            tokenizer=loaded,
            n_ctx=int(loaded.n_ctx if loaded is not None else self.config.n_ctx or self._llm_config.n_ctx),
            context_tokens=self.config.context_tokens,
            answer_tokens=self.config.answer_max_tokens,
            only_context=only_context,
            llm=lambda: self.llm,
            documents=self.index.with_documents,
            where=where,
            reader=self.reader(loaded),
            evidence=self.config.evidence,
        )
        run.details["reader"] = run.reader
        if where:
            run.details["where"] = where
            if not self.store.chunk_ids_where(where):
                run.notes.append(f"no document has the metadata {where}: the context holds no text")
        return run

    def reader(self, llm: LLM | None) -> str:
        """SearchConfig.reader, "auto" decided by the model's size: "small" under SMALL_READER_PARAMS parameters, or
        when the size is unknown (no model loaded, a backend that does not say), as every model installed offline is."""
        if self.config.reader != "auto":
            return self.config.reader
        params = getattr(llm, "n_params", None)
        return "large" if isinstance(params, int) and params >= SMALL_READER_PARAMS else "small"

    def naive_search(
        self,
        query: str,
        *,
        only_context: bool = False,
        stream: bool = False,
        config: NaiveConfig | None = None,
        where: Where | None = None,
    ) -> SearchResult | StreamingResult:
        """Hybrid (vector + keyword, fused) retrieval of text chunks (of the documents whose metadata
        has each `where` key=value), then one answer call."""
        run = self.begin("naive", query, only_context=only_context, where=where)
        return search_naive(self.index, run, config or self.config.naive, stream=stream)

    def local_candidates(
        self, query: str, query_vector: np.ndarray | None = None, config: LocalConfig | None = None
    ) -> LocalCandidates:
        """Local search's ranked entities, relationships, communities and chunks (no context, no LLM)."""
        return self.index.local.retrieve(
            check_query(query), query_vector, config or self.config.local, self.config.fusion
        )

    def local_search(
        self,
        query: str,
        *,
        only_context: bool = False,
        stream: bool = False,
        config: LocalConfig | None = None,
        where: Where | None = None,
    ) -> SearchResult | StreamingResult:
        """Entities linked to the query, their graph neighbourhood, reports and text (only of the
        documents whose metadata has each `where` key=value), then one answer call."""
        run = self.begin("local", query, only_context=only_context, where=where)
        return search_local(self.index, run, config or self.config.local, self.config.fusion, stream=stream)

    def global_search(
        self,
        query: str,
        level: int | None = None,
        *,
        only_context: bool = False,
        stream: bool = False,
        config: GlobalConfig | None = None,
    ) -> SearchResult | StreamingResult:
        """Map the community reports nearest the query, from the root down to `level` (every level
        when None), or without reports the RAPTOR tree's summaries (GlobalConfig.source), to scored
        key points, their findings' own words, and reduce them to one answer.

        LLM calls = map chunks + 1 (the reduce call is skipped when no point is important enough;
        the answer then says the index holds nothing relevant)."""
        query, config = check_query(query), config or self.config.global_
        if level is not None and (isinstance(level, bool) or not isinstance(level, int)):
            raise InputError(f"level must be an int (a community level, e.g. level=1) or None, got {level!r}")
        plan = map_plan(self.index, level, config)  # a wrong level or a missing table fails before any model loads
        run = self.begin("global", query, only_context=only_context)
        return search_global(self.index, run, plan, config, stream=stream)

    def tree_search(
        self,
        query: str,
        *,
        strategy: str | None = None,
        only_context: bool = False,
        stream: bool = False,
        config: TreeSearchConfig | None = None,
    ) -> SearchResult | StreamingResult:
        """RAPTOR: the tree's summaries and chunks most similar to the query ("collapsed": all
        layers at once; "traversal": top-down), packed into the budget, then one answer call."""
        config = config or self.config.tree
        if strategy is not None:
            config = dataclasses.replace(config, strategy=strategy)
        query = check_query(query)
        _ = self.index.tree  # an index without a tree fails here, before any model loads
        run = self.begin("tree", query, only_context=only_context)
        return search_tree(self.index, run, config, stream=stream)
