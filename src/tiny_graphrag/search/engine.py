"""QueryEngine: open an index once, then run local, global and naive searches against it.

    from tiny_graphrag import QueryEngine
    qe = QueryEngine("graphs/obama")
    print(qe.local_search("Who is Michelle Obama?"))
    for piece in qe.global_search("What are the main themes?", stream=True):
        print(piece, end="")

The graph, vectors and embedder are loaded in the constructor; the LLM only when an answer is
asked for (`only_context=True` never loads it). Without a loaded LLM, token budgets are counted
with a conservative estimate and the result says so.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..config import LLMConfig
from ..errors import IndexFormatError, InputError, ModelNotFoundError
from ..store import IndexStore
from ..citations import check_citations, parse_citations
from .config import GlobalConfig, LocalConfig, NaiveConfig, SearchConfig
from .context import (
    BuiltContext,
    build_local_context,
    build_naive_context,
    build_reduce_context,
    counter_note,
    pack_report_batches,
    relation_rows,
    entity_rows,
    source_chunk,
    source_report,
)
from .global_search import GlobalIndex, run_map
from .graph_index import GraphIndex
from .linking import EntityLinker
from .local import LocalCandidates, LocalRetriever
from .naive import HybridRetriever
from .prompts import (
    LOCAL_CITATIONS,
    NAIVE_CITATIONS,
    NO_DATA_ANSWER,
    answer_messages,
    map_messages,
    prompt_tokens,
    reduce_messages,
)
from .result import SearchResult, Sources, StreamingResult
from .tokens import TokenCounter, counter_for
from .vectors import VectorIndex

log = logging.getLogger(__name__)

# Room for the chat template's own tokens (role markers, BOS), which budgets do not see because
# they count message contents only (the same margin reports.py uses).
CHAT_TEMPLATE_MARGIN = 64
MIN_CONTEXT_TOKENS = 64  # less room than this for data means the query itself is too long
DEFAULT_N_CTX = LLMConfig().n_ctx


class QueryEngine:
    """Searches over one index directory. Not thread-safe (one search at a time)."""

    def __init__(
        self,
        index_dir: str | os.PathLike,
        *,
        llm: Any = None,
        embedder: Any = None,
        models_dir: str | os.PathLike | None = None,
        config: SearchConfig | None = None,
        device: str | None = None,
        cache: Any = None,
    ):
        """`llm`: None (the index's LLM settings, loaded on first answer), an LLMConfig, or a
        ready LLM. `embedder`: None (the index's), a model name, or an Embedder. `cache`: a
        CallCache for answers (default: in memory)."""
        from ..embed import Embedder
        from ..models import choose_device

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
            embedder = self._embedder_for(manifest.get("embedder") or {}, embedder, device, Embedder)
        self.embedder = embedder
        self._llm = None
        self._llm_config: LLMConfig | None = None
        if llm is None:
            self._llm_config = _llm_config_from(build_config.get("llm"))
        elif isinstance(llm, LLMConfig):
            self._llm_config = llm
        else:
            self._llm = llm

        # -- data -----------------------------------------------------------------------------
        self.device = choose_device(device)
        chunk_ids, chunk_matrix = self.store.vectors("chunks")
        self.chunk_vectors = VectorIndex(chunk_ids, chunk_matrix, device=self.device)
        dim = int(getattr(self.embedder, "dim", chunk_matrix.shape[1] if len(chunk_ids) else 0))
        if len(chunk_ids) and chunk_matrix.shape[1] != dim:
            raise IndexFormatError(
                f"index {self.path} was embedded with {chunk_matrix.shape[1]}-d vectors, but the embedder "
                f"{getattr(self.embedder, 'name', '?')} makes {dim}-d ones: use the embedder named in its "
                "manifest, or rebuild the index"
            )
        self.entity_vectors = self._optional_vectors("entities")
        self.graph = self.store.graph()
        self.sid_of: dict[str, int] = dict(self.store.source_ids())
        self.globals = GlobalIndex(self.store.reports(), self._optional_vectors("reports"))
        self.reports_by_community = {r.community_id: r for r in self.globals.reports}
        self.communities = self.store.communities()
        self.graph_index = GraphIndex(self.graph)
        self.linker = EntityLinker(self.graph, self.entity_vectors)
        self.hybrid = HybridRetriever(self.store, self.chunk_vectors, self.config.fusion)
        self.local = LocalRetriever(
            self.graph_index, self.linker, self.hybrid, self.communities, reported=set(self.globals.id_of)
        )
        self._doc_sources: dict[str, str] = {}
        self.load_seconds = round(time.perf_counter() - t0, 3)
        log.info("query engine for %s ready in %.1fs", self.path, self.load_seconds)

    # ---- setup helpers ------------------------------------------------------------------------
    def _embedder_for(self, info: dict, given, device, Embedder):
        if given is not None:
            return Embedder(str(given), models_dir=self.models_dir, device=device)
        name = info.get("name") or "all-MiniLM-L6-v2"
        try:
            embedder = Embedder(name, models_dir=self.models_dir, device=device)
        except ModelNotFoundError:
            if info.get("path") and Path(info["path"]).exists():
                embedder = Embedder(info["path"], models_dir=self.models_dir, device=device)
            else:
                raise
        if info.get("fingerprint") and embedder.fingerprint != info["fingerprint"]:
            log.warning(
                "the embedder %s differs from the one that built %s (fingerprint %s, expected %s): "
                "similarities may be off", embedder.path, self.path, embedder.fingerprint, info["fingerprint"],
            )
        return embedder

    def _optional_vectors(self, name: str) -> VectorIndex | None:
        if not self.store.has_vectors(name):
            return None
        ids, matrix = self.store.vectors(name)
        return VectorIndex(ids, matrix, device=self.device) if len(ids) else None

    @property
    def llm(self):
        """The LLM, loaded on first use."""
        if self._llm is None:
            from ..llm import open_llm

            assert self._llm_config is not None
            self._llm = open_llm(self._llm_config, models_dir=self.models_dir, cache=self._cache)
        return self._llm

    @property
    def llm_loaded(self) -> bool:
        return self._llm is not None

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "QueryEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- shared steps -------------------------------------------------------------------------
    def _check_query(self, query: Any) -> str:
        if not isinstance(query, str):
            raise InputError(f"the query must be a string, got {type(query).__name__}")
        if not query.strip():
            raise InputError("the query is empty: ask a question")
        return query.strip()

    def _counter(self, need_llm: bool) -> TokenCounter:
        return counter_for(self.llm if need_llm else self._llm)

    def _n_ctx(self) -> int:
        if self._llm is not None:
            return int(self._llm.n_ctx)
        if self.config.n_ctx:
            return int(self.config.n_ctx)
        return int(self._llm_config.n_ctx if self._llm_config else DEFAULT_N_CTX)

    def _room(self, messages: list[dict], max_tokens: int, counter: TokenCounter, what: str) -> int:
        """Tokens left for data in a prompt, or an InputError when the query alone is too long."""
        n_ctx = self._n_ctx()
        fixed = prompt_tokens(messages, counter)
        room = n_ctx - max_tokens - fixed - CHAT_TEMPLATE_MARGIN
        if room < MIN_CONTEXT_TOKENS:
            raise InputError(
                f"the query is too long: the {what} prompt without any data is already {fixed} tokens "
                f"({counter.name}), and with n_ctx={n_ctx} and {max_tokens} answer tokens only {max(room, 0)} "
                f"tokens would be left for data. Shorten the query, or raise n_ctx (LLMConfig.n_ctx)."
            )
        if self.config.context_tokens:
            room = min(room, int(self.config.context_tokens))
        return room

    def _embed_query(self, query: str) -> np.ndarray:
        return np.asarray(self.embedder.embed([query])[0], dtype=np.float32)

    def _nested_sources(self, sources: Sources) -> Sources:
        """Make ids quoted inside the shown reports (their own [Data: ...] citations) resolvable."""
        cited: dict[str, list[int]] = {"sources": [], "entities": [], "relationships": []}
        for r in sources.reports:
            for kind, ids in parse_citations(r.text).items():
                if kind in cited:
                    cited[kind].extend(ids)
        chunks = []
        for sid in dict.fromkeys(cited["sources"]):
            try:
                chunks.append(source_chunk(self.store.chunk_by_sid(sid), sid))
            except KeyError:
                pass
        keys = [self.graph_index.node_by_hid[h] for h in dict.fromkeys(cited["entities"]) if h in self.graph_index.node_by_hid]
        edges = [self.graph_index.edge_by_hid[h] for h in dict.fromkeys(cited["relationships"])
                 if h in self.graph_index.edge_by_hid]
        extra = Sources(
            chunks=tuple(chunks),
            entities=tuple(s for _, s in entity_rows(self.graph, keys)),
            relationships=tuple(s for _, s in relation_rows(self.graph, edges)),
        )
        return sources.merged(extra)

    def _doc_source(self, doc_id: str) -> str:
        if doc_id not in self._doc_sources:
            try:
                self._doc_sources[doc_id] = self.store.document(doc_id).source
            except KeyError:
                self._doc_sources[doc_id] = ""
        return self._doc_sources[doc_id]

    def _with_documents(self, sources: Sources) -> Sources:
        """Name each chunk's document file, so a citation leads to a file and a character span."""
        chunks = tuple(dataclasses.replace(c, source=self._doc_source(c.doc_id)) for c in sources.chunks)
        return dataclasses.replace(sources, chunks=chunks)

    def _result(self, mode: str, query: str, built: BuiltContext, counter: TokenCounter, seconds: dict,
                notes: list[str], details: dict, **fields: Any) -> SearchResult:
        return SearchResult(
            mode=mode, query=query, answer=fields.pop("answer", ""), context=fields.pop("context", built.text),
            sources=self._with_documents(fields.pop("sources", built.sources)), context_tokens=fields.pop("context_tokens", built.tokens),
            token_counter=counter.name, seconds={k: round(v, 4) for k, v in seconds.items()},
            notes=tuple(notes) + counter_note(counter), details=details, **fields,
        )

    def _answer(
        self,
        mode: str,
        query: str,
        built: BuiltContext,
        messages: list[dict] | None,
        counter: TokenCounter,
        max_tokens: int,
        *,
        stream: bool,
        seconds: dict,
        notes: list[str],
        details: dict,
        extra_calls: int = 0,
        extra_hits: int = 0,
        extra_prompt: int = 0,
        extra_completion: int = 0,
        t_start: float,
        context: str | None = None,
    ) -> SearchResult | StreamingResult:
        """Run the final answer call (or say there is no data), check citations, time it."""
        context = built.text if context is None else context
        if messages is None:  # nothing relevant: say so without asking the model
            notes = notes + ["nothing relevant to the query was found, so no answer call was made"]
            seconds["total"] = time.perf_counter() - t_start
            res = self._result(mode, query, built, counter, seconds, notes, details, answer=NO_DATA_ANSWER,
                               context=context, llm_calls=extra_calls, cache_hits=extra_hits,
                               prompt_tokens=extra_prompt, completion_tokens=extra_completion)
            return _as_stream(res) if stream else res

        llm = self.llm
        calls0, hits0 = llm.calls, llm.cache_hits
        t0 = time.perf_counter()
        n_prompt = prompt_tokens(messages, counter)

        def finish(text: str, n_completion: int, n_prompt_used: int, answer_seconds: float) -> SearchResult:
            answer, invalid = check_citations(text.strip(), built.sources)
            if invalid:
                log.info("removed citations of ids not in the context: %s", invalid)
            secs = dict(seconds, answer=answer_seconds, total=time.perf_counter() - t_start)
            return self._result(
                mode, query, built, counter, secs, notes, details, answer=answer, context=context,
                llm_calls=extra_calls + (llm.calls - calls0), cache_hits=extra_hits + (llm.cache_hits - hits0),
                prompt_tokens=extra_prompt + n_prompt_used, completion_tokens=extra_completion + n_completion,
                invalid_citations=invalid,
            )

        if not stream:
            out = llm.complete(messages, max_tokens=max_tokens, temperature=0.0)
            return finish(out.text, out.completion_tokens, out.prompt_tokens or n_prompt, time.perf_counter() - t0)

        pending = self._result(mode, query, built, counter, dict(seconds), notes, details, context=context,
                               llm_calls=extra_calls, cache_hits=extra_hits, prompt_tokens=extra_prompt,
                               completion_tokens=extra_completion)
        pieces = llm.stream(messages, max_tokens=max_tokens, temperature=0.0)
        return StreamingResult(
            pending, pieces, lambda text, secs: finish(text, counter(text), n_prompt, secs)
        )

    # ---- naive --------------------------------------------------------------------------------
    def naive_search(
        self,
        query: str,
        *,
        only_context: bool = False,
        stream: bool = False,
        config: NaiveConfig | None = None,
    ) -> SearchResult | StreamingResult:
        """Hybrid (vector + keyword, RRF) retrieval of text chunks, then one answer call."""
        t_start = time.perf_counter()
        query = self._check_query(query)
        cfg = config or self.config.naive
        seconds: dict[str, float] = {}
        counter = self._counter(not only_context)
        room = self._room(answer_messages("", query, NAIVE_CITATIONS), self.config.answer_max_tokens, counter,
                          "answer")
        t = time.perf_counter()
        qvec = self._embed_query(query)
        seconds["embed_query"] = time.perf_counter() - t
        t = time.perf_counter()
        ranked = self.hybrid.rank(query, qvec)
        seconds["retrieve"] = time.perf_counter() - t
        t = time.perf_counter()
        relevant = bool(ranked.keyword) or any(s >= cfg.min_similarity for _, s in ranked.dense[:1])
        ids = ranked.ids("fused")[: cfg.top_chunks] if relevant else []
        built = build_naive_context([self.store.chunk(c) for c in ids], self.sid_of, room, counter)
        seconds["context"] = time.perf_counter() - t
        details = {
            "only_context": only_context, "budget": room, "section_tokens": dict(built.section_tokens),
            "ranking": {"dense": ranked.dense[:10], "keyword": ranked.keyword[:10], "fused": ranked.fused[:10]},
        }
        notes: list[str] = []
        if only_context:
            seconds["total"] = time.perf_counter() - t_start
            return self._result("naive", query, built, counter, seconds, notes, details)
        messages = answer_messages(built.text, query, NAIVE_CITATIONS) if not built.empty else None
        return self._answer("naive", query, built, messages, counter, self.config.answer_max_tokens, stream=stream,
                            seconds=seconds, notes=notes, details=details, t_start=t_start)

    # ---- local --------------------------------------------------------------------------------
    def local_candidates(self, query: str, query_vector: np.ndarray | None = None,
                         config: LocalConfig | None = None) -> LocalCandidates:
        """Local search's ranked entities, relationships, communities and chunks (no context, no LLM)."""
        query = self._check_query(query)
        if query_vector is None:
            query_vector = self._embed_query(query)
        return self.local.retrieve(query, query_vector, config or self.config.local, self.config.fusion)

    def local_search(
        self,
        query: str,
        *,
        only_context: bool = False,
        stream: bool = False,
        config: LocalConfig | None = None,
    ) -> SearchResult | StreamingResult:
        """Entities linked to the query, their graph neighbourhood, reports and text, then one answer call."""
        t_start = time.perf_counter()
        query = self._check_query(query)
        cfg = config or self.config.local
        seconds: dict[str, float] = {}
        counter = self._counter(not only_context)
        room = self._room(answer_messages("", query, LOCAL_CITATIONS), self.config.answer_max_tokens, counter,
                          "answer")
        t = time.perf_counter()
        qvec = self._embed_query(query)
        seconds["embed_query"] = time.perf_counter() - t
        t = time.perf_counter()
        linked = self.local.link(query, qvec, cfg)
        seconds["link"] = time.perf_counter() - t
        t = time.perf_counter()
        cand = self.local.retrieve(query, qvec, cfg, self.config.fusion, linked=linked)
        seconds["retrieve"] = time.perf_counter() - t
        t = time.perf_counter()
        notes: list[str] = []
        if not cand.linked:
            notes.append("no entity in the graph matched the query: the context holds text chunks only")
        relevant = bool(cand.linked) or bool(cand.hybrid.keyword) or any(
            s >= self.config.naive.min_similarity for _, s in cand.hybrid.dense[:1]
        )
        chunk_ids = [c for c, _ in cand.chunks[:50]] if relevant else []
        reports = [(self.globals.id_of[c], self.reports_by_community[c]) for c in cand.communities
                   if c in self.reports_by_community]
        built = build_local_context(
            graph=self.graph,
            entities=[k for k, _ in cand.entities],
            relationships=list(cand.relationships),
            reports=reports,
            chunks=[self.store.chunk(c) for c in chunk_ids],
            sid_of=self.sid_of,
            budget=room,
            config=cfg,
            count=counter,
        )
        built = dataclasses.replace(built, sources=self._nested_sources(built.sources))
        seconds["context"] = time.perf_counter() - t
        details = {
            "only_context": only_context,
            "budget": room,
            "budgets": dict(built.details.get("budgets", {})),
            "section_tokens": dict(built.section_tokens),
            "linked_entities": [
                {"key": e.key, "name": self.graph.nodes[e.key].get("name", e.key), "hid": self.graph.nodes[e.key].get("hid"),
                 "score": round(e.score, 4), "how": e.how, "matched": e.matched}
                for e in cand.linked
            ],
        }
        if only_context:
            seconds["total"] = time.perf_counter() - t_start
            return self._result("local", query, built, counter, seconds, notes, details)
        messages = answer_messages(built.text, query, LOCAL_CITATIONS) if not built.empty else None
        return self._answer("local", query, built, messages, counter, self.config.answer_max_tokens, stream=stream,
                            seconds=seconds, notes=notes, details=details, t_start=t_start)

    # ---- global -------------------------------------------------------------------------------
    def global_search(
        self,
        query: str,
        level: int | None = None,
        *,
        only_context: bool = False,
        stream: bool = False,
        config: GlobalConfig | None = None,
    ) -> SearchResult | StreamingResult:
        """Map the level's community reports to scored key points, reduce them to one answer.

        LLM calls = map chunks + 1 (the reduce call is skipped when no point scored above 0;
        the answer then says the index holds nothing relevant)."""
        t_start = time.perf_counter()
        query = self._check_query(query)
        cfg = config or self.config.global_
        if level is None:
            level = cfg.level
        levels = self.globals.levels
        if not levels:
            raise InputError(
                f"index {self.path} has no community reports, which global search needs: rebuild it with "
                "reports enabled (an LLM), or use local or naive search"
            )
        if level is not None and (isinstance(level, bool) or not isinstance(level, int) or level not in levels):
            raise InputError(f"community level {level!r} does not exist in {self.path}; its levels are {levels}")
        seconds: dict[str, float] = {}
        counter = self._counter(not only_context)
        chunk_tokens = min(cfg.map_chunk_tokens, self._room(map_messages("", query), cfg.map_max_tokens, counter, "map"))
        reduce_room = self._room(reduce_messages("", query), cfg.reduce_max_tokens, counter, "reduce")

        t = time.perf_counter()
        chosen = level if level is not None else self.globals.choose_level(cfg, chunk_tokens, counter, counter.name)
        at_level = self.globals.at_level(chosen)
        qvec = None
        if cfg.prefilter_top is not None or cfg.prefilter_min_similarity is not None:
            qvec = self._embed_query(query)
        selected = self.globals.prefilter(at_level, qvec, cfg)
        batches = pack_report_batches(selected, chunk_tokens, counter, seed=cfg.shuffle_seed)
        without = len(batches)
        if len(selected) != len(at_level):
            without = len(pack_report_batches(at_level, chunk_tokens, counter, seed=cfg.shuffle_seed))
        seconds["context"] = time.perf_counter() - t

        shown = {rid for b in batches for rid in b.report_ids}
        sources = self._nested_sources(Sources(reports=tuple(
            source_report(rid, r) for rid, r in at_level if rid in shown)))
        map_text = "\n\n".join(f"=====Map call {i + 1} of {len(batches)}=====\n{b.text}" for i, b in enumerate(batches))
        details: dict[str, Any] = {
            "only_context": only_context,
            "level": chosen,
            "levels": levels,
            "level_chosen_by": "argument" if level is not None else "default rule (deepest level within max_map_chunks)",
            "reports_at_level": len(at_level),
            "reports_mapped": len(selected),
            "map_chunks": len(batches),
            "map_chunks_without_prefilter": without,
            "map_calls_saved_by_prefilter": without - len(batches),
            "map_chunk_tokens": chunk_tokens,
            "map_batch_tokens": [b.tokens for b in batches],
            "map_contexts": [b.text for b in batches],
            "reduce_budget": reduce_room,
        }
        map_tokens = sum(b.tokens for b in batches)
        built = BuiltContext(map_text, sources, map_tokens, chunk_tokens, {"map": map_tokens})
        notes: list[str] = []
        if len(batches) > cfg.max_map_chunks and len(selected) == len(at_level):
            notes.append(
                f"level {chosen} needs {len(batches)} map calls (one per {chunk_tokens}-token chunk of reports); "
                "GlobalConfig(prefilter_top=N) keeps only the N reports most similar to the query"
            )
        if only_context:
            seconds["total"] = time.perf_counter() - t_start
            return self._result("global", query, built, counter, seconds, notes, details)

        llm = self.llm
        calls0, hits0 = llm.calls, llm.cache_hits
        t = time.perf_counter()
        answers = run_map(llm, batches, query, cfg)
        seconds["map"] = time.perf_counter() - t
        points = [p for a in answers for p in a.points]
        t = time.perf_counter()
        reduce_text, kept, reduce_tokens = build_reduce_context(points, reduce_room, counter)
        seconds["reduce_context"] = time.perf_counter() - t
        details.update(
            invalid_map_answers=sum(1 for a in answers if not a.valid),
            points=[{"score": p.score, "description": p.description, "batch": p.batch} for p in points],
            points_in_reduce=len(kept),
            reduce_context=reduce_text,
            reduce_tokens=reduce_tokens,
        )
        if not kept:
            notes.append("no map answer found anything helpful (every point scored 0): the reduce call was skipped")
        context = map_text + "\n\n=====Reduce=====\n" + reduce_text
        # context_tokens of a global result: everything the model read, map batches and reduce points.
        reduce_built = BuiltContext(reduce_text, sources, map_tokens + reduce_tokens, reduce_room,
                                    {"map": map_tokens, "reduce": reduce_tokens})
        messages = reduce_messages(reduce_text, query) if kept else None
        return self._answer(
            "global", query, reduce_built, messages, counter, cfg.reduce_max_tokens, stream=stream, seconds=seconds,
            notes=notes, details=details, t_start=t_start, context=context,
            extra_calls=llm.calls - calls0, extra_hits=llm.cache_hits - hits0,
            extra_prompt=sum(a.prompt_tokens for a in answers), extra_completion=sum(a.completion_tokens for a in answers),
        )


def _llm_config_from(data: dict | None) -> LLMConfig:
    if not data:
        return LLMConfig()
    known = {f.name for f in dataclasses.fields(LLMConfig)}
    return LLMConfig(**{k: v for k, v in data.items() if k in known})


def _as_stream(result: SearchResult) -> StreamingResult:
    """A finished result in streaming form (one piece: the whole answer)."""
    return StreamingResult(result, iter([result.answer]), lambda text, secs: result)
