"""The indexing pipeline: `build_index` runs the stages below in order, with progress, caching and resume.

documents -> chunks -> (models) -> extractions -> graph (+ alias resolution) -> embeddings -> communities -> reports ->
tree -> manifest. Each stage is a plain function of the `Build` it belongs to. Everything is written into a temporary
directory that is moved into place only when complete; model calls (extraction per chunk, LLM reports) are cached in the
index's own cache folder beside it (`.NAME.cache/`, or `BuildConfig.cache_dir`), so a rerun after a crash or Ctrl-C
redoes no finished call."""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, closing, contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiny_graphrag.backends.embed import CachedEmbedder, Embedder, TextEmbedder, document_title, titled
from tiny_graphrag.backends.files import choose_device
from tiny_graphrag.backends.llm import LLM, CachedLLM, open_llm
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
from tiny_graphrag.indexing.chunking import chunk_documents
from tiny_graphrag.indexing.documents import Input, LoadedInputs, collect_documents, input_paths
from tiny_graphrag.indexing.resolve import resolve_aliases
from tiny_graphrag.indexing.result import BuildResult, BuildSummary
from tiny_graphrag.indexing.sync import changes, check_settings, plan, previous_index, settings
from tiny_graphrag.records import Chunk, Community, Document, Extraction, Report
from tiny_graphrag.reports.communities import hierarchical_communities
from tiny_graphrag.reports.context import SourceText
from tiny_graphrag.reports.generate import generate_reports
from tiny_graphrag.schema import Schema

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx

log = logging.getLogger(__name__)


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

    `out_dir` may be new, an empty folder or an existing index; anything else is refused before any work starts. An
    existing index is updated: its documents stay, new and changed inputs are indexed, and with `sync` documents not
    among the inputs are removed; only changed content costs model calls, and the result equals a fresh build of the
    final documents. The settings must be the index's (else the difference is named); `force` instead rebuilds it from
    scratch with the settings given (and also replaces an unfinished index). The new version is published only when
    complete. Nothing outside the index is ever removed or overwritten.

    `executor` (e.g. `distributed.RayExecutor`) runs extraction and embedding elsewhere: it has `extract(extractor,
    chunks)` yielding (position, Extraction) and `embedder(embedder)`."""
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
            b = Build(schema, config, cache, IndexStore.create(tmp), previous, sync, progress, executor)
            summary = _run(b, inputs, extractor, embedder, llm)
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


@dataclass
class Build:
    """One build: what every stage reads (settings, the store being written, the index an update
    starts from, the corpus once read) and what the stages add up for the summary."""

    schema: Schema
    config: BuildConfig
    cache: CallCache
    store: IndexStore  # in the staging folder
    previous: IndexStore | None  # the index an update starts from (None: a fresh build)
    sync: bool
    progress: bool
    executor: Executor | None
    docs: list[Document] = field(default_factory=list)  # set by read_documents
    skipped: tuple[str, ...] = ()  # files in the input folders of formats not read
    chunks: list[Chunk] = field(default_factory=list)  # set by chunk
    seconds: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        log.info("stage %s ...", name)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(time.perf_counter() - t0, 3)
            log.info("stage %s done in %.1fs", name, self.seconds[name])

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning(message)


@dataclass(frozen=True)
class Models:
    """The build's models, each behind the call cache, and the settings they make up."""

    extractor: Extractor
    embedder: CachedEmbedder
    llm: CachedLLM | None  # when reports or a tree need one
    llm_info: dict[str, Any] | None  # its name, fingerprint and n_ctx, for the manifest
    settings: dict[str, Any]
    chunk_text: Callable[[Chunk], str]  # what is embedded for a chunk


def _run(
    b: Build,
    inputs: Input | Sequence[Input] | LoadedInputs,
    extractor: Extractor | None,
    embedder: TextEmbedder | None,
    llm: LLM | None,
) -> BuildSummary:
    read_documents(b, inputs)
    chunk(b)
    models = load_models(b, extractor, embedder, llm)
    with b.stage("extract"):
        extractions = extract_cached(models.extractor, b.chunks, b.cache, b.calls, b.progress, b.executor)
    graph = make_graph(b, models, extractions)
    embed(b, models, graph)
    with b.stage("communities"):
        communities = hierarchical_communities(graph, b.config.communities)
        b.store.save_communities(communities)
    reports = write_reports(b, models, graph, communities)
    tree = make_tree(b, models)
    b.calls["embedding"], b.calls["embedding_cached"] = models.embedder.calls, models.embedder.cache_hits
    with b.stage("save"):  # the graph, then the manifest last: the index is complete
        b.store.save_graph(graph)
        summary = summarize(b, graph, communities, reports)
        write_manifest(b, models, summary, tree)
        b.store.close()
    return summary  # its seconds_per_stage is `b.seconds`, which now holds the "save" stage too


def read_documents(b: Build, inputs: Input | Sequence[Input] | LoadedInputs) -> None:
    """The documents to index; for an update, the index's documents with the inputs' changes."""
    with b.stage("read"):
        known = b.previous.documents() if b.previous is not None else []
        loaded = inputs if isinstance(inputs, LoadedInputs) else collect_documents(inputs, b.config.documents, known)
        b.docs, b.skipped = loaded.documents, loaded.skipped
        if b.previous is not None:
            update = plan(known, loaded.documents, sync=b.sync, unread=loaded.failed)
            b.docs = update.documents
            counts = map(len, (update.added, update.removed, update.already_indexed))
            log.info("update: %d document(s) to add, %d to remove, %d already indexed", *counts)
    b.warnings += loaded.notes  # unread files, pages without text, the formats skipped: logged as read


def chunk(b: Build) -> None:
    with b.stage("chunk"):
        b.chunks = chunk_documents(b.docs, b.config.chunking)
    if not b.chunks:
        raise InputError("the inputs contain no text to index (only whitespace or punctuation)")
    b.store.add_documents(b.docs)
    b.store.add_chunks(b.chunks)


def load_models(b: Build, extractor: Extractor | None, embedder: TextEmbedder | None, llm: LLM | None) -> Models:
    """The given models, or those of the config, loaded before any model call: a missing model, or a
    setting an update's index does not share, fails now rather than after hours of extraction."""
    config = b.config
    if b.previous is not None:  # schema and config first: a difference is named before any model loads
        check_settings(b.previous, settings(b.schema.to_dict(), config, {}, {}, None), only=("schema.", "config."))
    if extractor is None:
        ex_config = config.extraction
        if b.schema.spacy_labels and ex_config.spacy_label_map is None:  # the schema file's [spacy_labels]
            ex_config = replace(ex_config, spacy_label_map=dict(b.schema.spacy_labels))
        extractor = make_extractor(b.schema, ex_config, models_dir=config.models_dir)
    cached: CachedLLM | None = None
    if config.reports or config.tree.enabled:
        # Load the report model now: a missing or broken GGUF must fail before hours of extraction.
        if llm is None:
            cached = open_llm(config.llm, models_dir=config.models_dir, cache=b.cache)
        else:  # a bare backend: cached and counted like the configured model
            cached = llm if isinstance(llm, CachedLLM) else CachedLLM(llm, b.cache)
    if config.tree.enabled:
        from tiny_graphrag.indexing.tree_cluster import require_libraries

        require_libraries()  # a missing umap-learn fails now, not after the extraction
    if embedder is None:
        embedder = Embedder(config.embedder_model, models_dir=config.models_dir, device=config.extraction.device)
    title = {d.id: d.metadata.get("title") or document_title(d.source) for d in b.docs}

    def chunk_text(c: Chunk) -> str:
        return titled(c.text, title[c.doc_id])

    if b.executor is not None:  # before extraction: the executor may embed the chunks as it extracts them
        embedder = b.executor.embedder(embedder, chunk_text)
    cached_embedder = CachedEmbedder(embedder, b.cache)  # an update embeds only new texts
    llm_info = (
        None if cached is None else {"name": cached.name, "fingerprint": cached.fingerprint, "n_ctx": cached.n_ctx}
    )
    current = settings(b.schema.to_dict(), config, extractor.describe(), cached_embedder.describe(), llm_info)
    if b.previous is not None:  # before any model call: an index never mixes two settings
        check_settings(b.previous, current)
    return Models(extractor, cached_embedder, cached, llm_info, current, chunk_text)


def make_graph(b: Build, models: Models, extractions: list[Extraction]) -> nx.MultiDiGraph[str]:
    with b.stage("graph"):
        graph = build_graph(b.chunks, extractions, b.schema)
        resolve_aliases(graph, embed=models.embedder.embed, config=b.config.resolution)  # recorded in the graph
    if graph.number_of_nodes() == 0:
        b.warn(
            "no entities were found: the graph is empty, so there are no communities or reports; "
            "naive search still works. Check the schema's entity types and the extraction threshold."
        )
    elif graph.number_of_edges() == 0:
        b.warn("no relations were found: communities are single entities; check relation types/threshold")
    return graph


def embed(b: Build, models: Models, graph: nx.MultiDiGraph[str]) -> None:
    with b.stage("embed"):  # no bar: sentence-transformers' "Batches" bars would nest in the build's
        chunks = models.embedder.embed([models.chunk_text(c) for c in b.chunks])
        b.store.save_vectors("chunks", [c.id for c in b.chunks], chunks)
        keys = list(graph.nodes)
        b.store.save_vectors("entities", keys, models.embedder.embed([entity_text(graph.nodes[k]) for k in keys]))


def entity_text(data: Mapping[str, Any]) -> str:
    aliases = [a for a in data.get("aliases", []) if a != data.get("name")][:3]
    extra = f"; also: {', '.join(aliases)}" if aliases else ""
    return f"{data.get('name', '')} ({data.get('type', '')}){extra}"


def write_reports(b: Build, models: Models, graph: nx.MultiDiGraph[str], communities: list[Community]) -> list[Report]:
    if not b.config.reports:
        return []
    llm = models.llm
    if not communities or llm is None:
        b.store.save_vectors("reports", [], models.embedder.embed([]))
        return []
    calls, hits = llm.calls, llm.cache_hits
    with b.stage("reports"):
        # With the chunk's start, report snippets are cut at the exact document-level spans.
        starts = {c.id: c.start for c in b.chunks}
        sources = {cid: SourceText(sid, text, starts[cid]) for cid, (sid, text) in b.store.sources().items()}
        reports = generate_reports(
            graph,
            communities,
            sources,
            llm,
            max_report_tokens=b.config.llm.max_report_tokens,
            max_context_tokens=b.config.llm.report_context_tokens,
            min_size=b.config.llm.report_min_size,
            progress=b.progress,
        )
        b.store.save_reports(reports)
        vectors = models.embedder.embed([r.text() for r in reports])
        b.store.save_vectors("reports", [r.community_id for r in reports], vectors)
    b.calls["llm"], b.calls["llm_cached"] = llm.calls - calls, llm.cache_hits - hits
    return reports


def make_tree(b: Build, models: Models) -> dict[str, Any] | None:
    """The RAPTOR tree's description for the manifest; None: built without a tree (`--tree` builds one)."""
    if not b.config.tree.enabled or models.llm is None:
        return None
    from tiny_graphrag.indexing.tree import tree_stage  # imports umap-learn and scikit-learn only when a tree is built

    with b.stage("tree"):  # an update re-summarizes only clusters whose text is new (call cache)
        info = tree_stage(b.store, b.chunks, models.llm, models.embedder, b.config.tree, progress=b.progress)
    b.calls["tree_llm"], b.calls["tree_llm_cached"] = info["llm_calls"], info["llm_cached"]
    if info["note"]:
        b.warn(info["note"])
    return info


def summarize(
    b: Build, graph: nx.MultiDiGraph[str], communities: list[Community], reports: list[Report]
) -> BuildSummary:
    return BuildSummary(
        documents=len(b.docs),
        chunks=len(b.chunks),
        entities_per_type=dict(Counter(d.get("type", "?") for _, d in graph.nodes(data=True))),
        relations_per_label=dict(Counter(str(d.get("label", k)) for _, _, k, d in graph.edges(keys=True, data=True))),
        merged_aliases=len(graph.graph.get("merges", [])),
        dropped_relations=dict(graph.graph.get("dropped_relations", {})),
        communities_per_level=dict(sorted(Counter(c.level for c in communities).items())),
        reports=len(reports),
        seconds_per_stage=b.seconds,
        model_calls=b.calls,
        warnings=tuple(b.warnings),
        skipped_files=b.skipped,
        fallback_reports=sum(1 for r in reports if r.fallback),
        changes=changes(b.previous, b.store, b.calls) if b.previous is not None else None,
    )


def write_manifest(b: Build, models: Models, summary: BuildSummary, tree: dict[str, Any] | None) -> None:
    b.store.write_manifest(
        {
            "library_version": VERSION,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "schema": b.schema.to_dict(),
            "config": asdict(b.config),
            "extractor": models.extractor.describe(),
            "embedder": models.embedder.describe(),
            "llm": models.llm_info,
            "tree": tree,  # None: built without a tree (`--tree` builds one)
            "settings": models.settings,
            "documents": [{"id": d.id, "source": d.source, "chars": len(d.text)} for d in b.docs],
            "counts": {
                "documents": summary.documents,
                "chunks": summary.chunks,
                "entities": sum(summary.entities_per_type.values()),
                "relations": sum(summary.relations_per_label.values()),
                "communities": sum(summary.communities_per_level.values()),
                "reports": summary.reports,
            },
            "summary": summary.to_dict(),
        }
    )
