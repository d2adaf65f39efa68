"""The indexing pipeline: one function that runs the stages, with progress, caching and resume.

documents -> chunks -> extractions -> graph (+ alias resolution) -> embeddings -> communities
-> reports. Everything is written into a temporary directory that is moved into place only when
complete; model calls (extraction per chunk, LLM reports) are cached in the index's own cache
folder beside it (`.NAME.cache/`, or `BuildConfig.cache_dir`), so a rerun after a crash or
Ctrl-C redoes no finished call.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, closing, contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from tiny_graphrag.backends.embed import CachedEmbedder, Embedder, TextEmbedder, document_title, titled
from tiny_graphrag.backends.files import choose_device
from tiny_graphrag.backends.llm import LLM, CachedLLM, open_llm
from tiny_graphrag.build.chunking import chunk_documents
from tiny_graphrag.build.documents import Input, LoadedInputs, collect_documents, input_paths
from tiny_graphrag.build.resolve import resolve_aliases
from tiny_graphrag.build.result import BuildResult, BuildSummary
from tiny_graphrag.build.sync import changes, check_settings, plan, previous_index, settings
from tiny_graphrag.config import VERSION, BuildConfig
from tiny_graphrag.errors import InputError, TinyGraphRAGError
from tiny_graphrag.extract.base import Extractor, make_extractor
from tiny_graphrag.extract.cached import Executor, extract_cached
from tiny_graphrag.index.cache import CallCache
from tiny_graphrag.index.graph import build_graph
from tiny_graphrag.index.placement import (
    cache_folder,
    check_output,
    clean_stale_staging,
    disk_full_error,
    index_lock,
    is_index,
    publish,
    staging_dir,
)
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.records import Chunk
from tiny_graphrag.reports.communities import hierarchical_communities
from tiny_graphrag.reports.context import SourceText
from tiny_graphrag.reports.generate import generate_reports
from tiny_graphrag.schema import Schema

log = logging.getLogger(__name__)


@contextmanager
def _stage(seconds: dict[str, float], name: str) -> Iterator[None]:
    log.info("stage %s ...", name)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        seconds[name] = round(time.perf_counter() - t0, 3)
        log.info("stage %s done in %.1fs", name, seconds[name])


def build_index(
    inputs: Input | Sequence[Input] | LoadedInputs,
    out_dir: str | os.PathLike[str],
    *,
    schema: Schema | str | os.PathLike[str] | Mapping[str, Any] | None = None,
    entity_types: Sequence[str] | None = None,
    relation_types: Sequence[str] | Mapping[str, Any] | None = None,
    config: BuildConfig = BuildConfig(),
    extractor: Extractor | None = None,
    embedder: TextEmbedder | None = None,
    llm: LLM | None = None,
    progress: bool = True,
    force: bool = False,
    sync: bool = False,
    executor: Executor | None = None,
) -> BuildResult:
    """Build an index of `inputs` (files, directories, or text) into `out_dir`.

    An input is a path (a `Path`, or a string that names an existing file or folder or looks like a
    path: a missing one is an InputError naming it) or document text. To index a string as text
    whatever it looks like, pass it as `Text("...")` (`from tiny_graphrag import Text`); a multi-line
    string, or a sentence without a path separator or file extension, is also read as text.

    The schema is a Schema, a preset name ("general", "biomedical", "finance", "geography"), a
    schema file path, a mapping, or given as `entity_types` (+ `relation_types`). `extractor`,
    `embedder` and `llm` may be passed as ready objects (they are then not loaded from config).

    `out_dir` may be new, an empty folder or an existing index; anything else is refused before
    any work starts. An existing index is updated: its documents stay, new and changed inputs are
    indexed, and with `sync` documents not among the inputs are removed; only changed content
    costs model calls, and the result equals a fresh build of the final documents. The settings
    must be the index's (else the difference is named); `force` instead rebuilds it from scratch
    with the settings given (and also replaces an unfinished index). The new version is published
    only when complete. Nothing outside the index is ever removed or overwritten.

    `executor` (e.g. `distributed.RayExecutor`) runs extraction and embedding elsewhere: it has
    `extract(extractor, chunks)` yielding (position, Extraction) and `embedder(embedder)`.
    """
    schema = _resolve_schema(schema, entity_types, relation_types)
    paths = [] if isinstance(inputs, LoadedInputs) else input_paths(inputs)
    out_dir = check_output(Path(out_dir), paths, force=force)
    with index_lock(out_dir), ExitStack() as opened:  # one writer per index; a second fails with a clear message
        previous = previous_index(out_dir) if is_index(out_dir) and not force else None
        if previous is not None:
            opened.callback(previous.close)
        if config.extraction.device not in (None, "cpu"):
            choose_device(config.extraction.device)  # an unusable --device fails now, not after extraction
        clean_stale_staging(out_dir)
        # The cache opens first: a cache that cannot be used leaves no staging folder behind.
        cache = opened.enter_context(
            closing(CallCache(Path(config.cache_dir or cache_folder(out_dir)) / "calls.sqlite"))
        )
        tmp = staging_dir(out_dir)
        try:
            summary = _run(
                inputs, tmp, schema, config, cache, extractor, embedder, llm, progress, previous, sync, executor
            )
            publish(tmp, out_dir, force=force)
        except BaseException as exc:  # Ctrl-C included: never leave a half-written index behind
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, OSError) and (err := disk_full_error(exc, out_dir)) is not None:
                raise err from exc
            raise
    log.info("index written to %s", out_dir)
    return BuildResult(path=out_dir, summary=summary)


def _resolve_schema(
    schema: Schema | str | os.PathLike[str] | Mapping[str, Any] | None,
    entity_types: Sequence[str] | None,
    relation_types: Sequence[str] | Mapping[str, Any] | None,
) -> Schema:
    if entity_types is not None or relation_types is not None:
        if schema is not None:
            raise TinyGraphRAGError("pass either schema= or entity_types=/relation_types=, not both")
        if entity_types is None:
            entity_types = Schema.preset("general").entity_types
        return Schema.from_dict({"entity_types": list(entity_types), "relation_types": relation_types or []})
    return Schema.load(schema)


def _run(
    inputs: Input | Sequence[Input] | LoadedInputs,
    tmp: Path,
    schema: Schema,
    config: BuildConfig,
    cache: CallCache,
    extractor: Extractor | None,
    embedder: TextEmbedder | None,
    llm: LLM | None,
    progress: bool,
    previous: IndexStore | None,
    sync: bool,
    executor: Executor | None,
) -> BuildSummary:
    seconds: dict[str, float] = {}
    warnings: list[str] = []
    calls: dict[str, int] = {}

    with _stage(seconds, "read"):
        known = previous.documents() if previous is not None else []
        loaded = inputs if isinstance(inputs, LoadedInputs) else collect_documents(inputs, config.documents, known)
        docs = loaded.documents
        if previous is not None:  # an update: the index's documents with the inputs' changes
            update = plan(known, docs, sync=sync, unread=loaded.failed)
            docs = update.documents
            log.info(
                "update: %d document(s) to add, %d to remove, %d already indexed",
                len(update.added),
                len(update.removed),
                len(update.already_indexed),
            )
    warnings += loaded.notes  # unread files, pages without text, the formats skipped
    with _stage(seconds, "chunk"):
        chunks = chunk_documents(docs, config.chunking)
    if not chunks:
        raise InputError("the inputs contain no text to index (only whitespace or punctuation)")

    store = IndexStore.create(tmp)
    store.add_documents(docs)
    store.add_chunks(chunks)

    if previous is not None:  # schema and config first: a difference is named before any model loads
        check_settings(
            previous.manifest["settings"],
            settings(schema.to_dict(), config, {}, {}, None),
            str(previous.path),
            only=("schema.", "config."),
        )
    if extractor is None:
        ex_config = config.extraction
        if schema.spacy_labels and ex_config.spacy_label_map is None:  # the schema file's [spacy_labels]
            ex_config = replace(ex_config, spacy_label_map=dict(schema.spacy_labels))
        extractor = make_extractor(schema, ex_config, models_dir=config.models_dir)
    cached: CachedLLM | None = None  # the LLM behind the call cache, when reports or a tree need one
    if config.reports or config.tree.enabled:
        # Load the report model now: a missing or broken GGUF must fail before hours of extraction.
        if llm is None:
            cached = open_llm(config.llm, models_dir=config.models_dir, cache=cache)
        else:  # a bare backend: cached and counted like the configured model
            cached = llm if isinstance(llm, CachedLLM) else CachedLLM(llm, cache)
    if config.tree.enabled:
        from tiny_graphrag.build.tree_cluster import require_libraries

        require_libraries()  # a missing umap-learn fails now, not after the extraction
    if embedder is None:
        embedder = Embedder(config.embedder_model, models_dir=config.models_dir, device=config.extraction.device)
    title = {d.id: d.metadata.get("title") or document_title(d.source) for d in docs}

    def chunk_text(c: Chunk) -> str:  # what is embedded for a chunk
        return titled(c.text, title[c.doc_id])

    if executor is not None:  # before extraction: the executor may embed the chunks as it extracts them
        embedder = executor.embedder(embedder, chunk_text)
    embedder = CachedEmbedder(embedder, cache)  # an update embeds only new texts
    llm_info = (
        {"name": cached.name, "fingerprint": cached.fingerprint, "n_ctx": cached.n_ctx} if cached is not None else None
    )
    current = settings(schema.to_dict(), config, extractor.describe(), embedder.describe(), llm_info)
    if previous is not None:  # before any model call: an index never mixes two settings
        check_settings(previous.manifest["settings"], current, str(previous.path))

    with _stage(seconds, "extract"):
        extractions = extract_cached(extractor, chunks, cache, calls, progress, executor)

    with _stage(seconds, "graph"):
        graph = build_graph(chunks, extractions, schema)
        merges = resolve_aliases(graph, embed=embedder.embed, config=config.resolution)
    if graph.number_of_nodes() == 0:
        warnings.append(
            "no entities were found: the graph is empty, so there are no communities or reports; "
            "naive search still works. Check the schema's entity types and the extraction threshold."
        )
    elif graph.number_of_edges() == 0:
        warnings.append("no relations were found: communities are single entities; check relation types/threshold")

    with _stage(seconds, "embed"):  # no bar: sentence-transformers' "Batches" bars would nest in the build's
        store.save_vectors("chunks", [c.id for c in chunks], embedder.embed([chunk_text(c) for c in chunks]))
        keys = list(graph.nodes)
        store.save_vectors("entities", keys, embedder.embed([entity_text(graph.nodes[k]) for k in keys]))

    with _stage(seconds, "communities"):
        communities = hierarchical_communities(graph, config.communities)
        store.save_communities(communities)

    reports = []
    if config.reports and communities and cached is not None:
        calls_before, hits_before = cached.calls, cached.cache_hits
        with _stage(seconds, "reports"):
            # With the chunk's start, report snippets are cut at the exact document-level spans.
            starts = {c.id: c.start for c in chunks}
            sources = {cid: SourceText(sid, text, starts[cid]) for cid, (sid, text) in store.sources().items()}
            reports = generate_reports(
                graph,
                communities,
                sources,
                cached,
                max_report_tokens=config.llm.max_report_tokens,
                max_context_tokens=config.llm.report_context_tokens,
                min_size=config.llm.report_min_size,
                progress=progress,
            )
            store.save_reports(reports)
            store.save_vectors(
                "reports", [r.community_id for r in reports], embedder.embed([r.text() for r in reports])
            )
        calls["llm"] = cached.calls - calls_before
        calls["llm_cached"] = cached.cache_hits - hits_before
    elif config.reports:
        store.save_vectors("reports", [], embedder.embed([]))

    tree_info: dict[str, Any] | None = None
    if config.tree.enabled and cached is not None:
        from tiny_graphrag.build.tree import tree_stage  # imports umap-learn and scikit-learn only when a tree is built

        with _stage(seconds, "tree"):  # an update re-summarizes only clusters whose text is new (call cache)
            tree_info = tree_stage(store, chunks, cached, embedder, config.tree, progress=progress)
        calls["tree_llm"], calls["tree_llm_cached"] = tree_info["llm_calls"], tree_info["llm_cached"]
        if tree_info["note"]:
            warnings.append(tree_info["note"])

    calls["embedding"], calls["embedding_cached"] = embedder.calls, embedder.cache_hits
    with _stage(seconds, "save"):
        store.save_graph(graph)
        summary = BuildSummary(
            documents=len(docs),
            chunks=len(chunks),
            entities_per_type=dict(Counter(d.get("type", "?") for _, d in graph.nodes(data=True))),
            relations_per_label=dict(
                Counter(str(d.get("label", k)) for _, _, k, d in graph.edges(keys=True, data=True))
            ),
            merged_aliases=len(merges),
            dropped_relations=dict(graph.graph.get("dropped_relations", {})),
            communities_per_level=dict(sorted(Counter(c.level for c in communities).items())),
            reports=len(reports),
            seconds_per_stage=seconds,
            model_calls=calls,
            warnings=tuple(warnings),
            skipped_files=loaded.skipped,
            fallback_reports=sum(1 for r in reports if r.fallback),
            changes=changes(previous, store, calls) if previous is not None else None,
        )
        store.write_manifest(
            {
                "library_version": VERSION,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "schema": schema.to_dict(),
                "config": asdict(config),
                "extractor": extractor.describe(),
                "embedder": embedder.describe(),
                "llm": llm_info,
                "tree": tree_info,  # None: built without a tree (`--tree` builds one)
                "settings": current,
                "documents": [{"id": d.id, "source": d.source, "chars": len(d.text)} for d in docs],
                "counts": {
                    "documents": len(docs),
                    "chunks": len(chunks),
                    "entities": graph.number_of_nodes(),
                    "relations": graph.number_of_edges(),
                    "communities": len(communities),
                    "reports": len(reports),
                },
                "summary": summary.to_dict(),
            }
        )
        store.close()
    for w in warnings[len(loaded.notes) :]:  # the inputs' notes were logged as they were read
        log.warning(w)
    return summary  # its seconds_per_stage is `seconds`, which now holds the "save" stage too


def entity_text(data: Mapping[str, Any]) -> str:
    aliases = [a for a in data.get("aliases", []) if a != data.get("name")][:3]
    extra = f"; also: {', '.join(aliases)}" if aliases else ""
    return f"{data.get('name', '')} ({data.get('type', '')}){extra}"
