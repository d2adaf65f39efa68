"""What every search mode reads: one index opened for search, read-only.

A mode is a function over a `SearchIndex` and the `SearchRun` it reports into (answer.py); it never sees the engine that
opened them, so a mode can be read and tested on its own. The engine (engine.py) opens the index, owns the LLM and
dispatches."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tiny_graphrag.backends.embed import document_title
from tiny_graphrag.errors import IndexFormatError, InputError
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.records import Chunk, Document
from tiny_graphrag.search.config import FusionConfig
from tiny_graphrag.search.graph_index import GraphIndex
from tiny_graphrag.search.hybrid import HybridRetriever
from tiny_graphrag.search.linking import EntityLinker
from tiny_graphrag.search.local_retriever import LocalRetriever
from tiny_graphrag.search.report_index import GlobalIndex, TreeIndex, tree_as_reports
from tiny_graphrag.search.result import Sources
from tiny_graphrag.search.vectors import MemoEmbed, VectorIndex

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.backends.embed import TextEmbedder


class SearchIndex:
    """The graph, text, vectors, reports and retrievers of one index, loaded once for searching."""

    def __init__(
        self, store: IndexStore, embedder: TextEmbedder, *, device: str, fusion: FusionConfig | None = None
    ) -> None:
        self.store, self.embedder, self.device = store, embedder, device
        self.path = Path(store.path)
        manifest = store.manifest
        # The relation label the spaCy extractor gives names that only share a sentence (None: typed relations only).
        self.cooccurrence_relation: str | None = (manifest.get("extractor") or {}).get("cooccurrence_relation")
        chunk_ids, chunk_matrix = store.vectors("chunks")
        self.chunk_vectors = VectorIndex(chunk_ids, chunk_matrix, device=device)
        if len(chunk_ids) and chunk_matrix.shape[1] != embedder.dim:
            raise IndexFormatError(
                f"index {self.path} was embedded with {chunk_matrix.shape[1]}-d vectors, but the embedder "
                f"{getattr(embedder, 'name', '?')} makes {embedder.dim}-d ones: use the embedder named "
                "in its manifest, or rebuild the index"
            )
        self.entity_vectors = self.optional_vectors("entities")
        self.graph = store.graph()
        self.sid_of: dict[str, int] = dict(store.source_ids())
        self.communities = store.communities()
        self.globals = GlobalIndex(
            store.reports(), self.optional_vectors("reports"), children={c.id: c.children for c in self.communities}
        )
        self.reports_by_community = {r.community_id: r for r in self.globals.reports}
        # Texts global search embeds per query (findings, map points): each embedded once per engine.
        self.embed_texts = MemoEmbed(embedder.embed)
        self.graph_index = GraphIndex(
            self.graph, entity_vectors=self.entity_vectors, cooccurrence_relation=self.cooccurrence_relation
        )
        self.linker = EntityLinker(self.graph, self.entity_vectors)
        self.hybrid = HybridRetriever(store, self.chunk_vectors, fusion)
        self.local = LocalRetriever(
            self.graph_index,
            self.linker,
            self.hybrid,
            self.communities,
            reported=set(self.globals.id_of),
            embed=self.embed_query,
        )
        self._docs: dict[str, Document] = {}

    def optional_vectors(self, name: str) -> VectorIndex | None:
        """The named vectors, or None when the index has none (built without reports, say)."""
        if not self.store.has_vectors(name):
            return None
        ids, matrix = self.store.vectors(name)
        return VectorIndex(ids, matrix, device=self.device) if len(ids) else None

    @functools.cached_property
    def tree(self) -> TreeIndex:
        """The index's RAPTOR tree (summaries and their vectors), read on first use; an InputError
        naming the build option when the index has none."""
        return TreeIndex.load(self.store, self.chunk_vectors.ids, self.device)

    @functools.cached_property
    def tree_globals(self) -> GlobalIndex:
        """The tree's summaries as the report table global search maps (top layer = level 0)."""
        return tree_as_reports(list(self.tree.nodes.values()), self.tree.vectors)

    def map_source(self, source: str) -> GlobalIndex:
        """The reports, or the tree's summaries (GlobalConfig.source; "auto": the tree only without reports)."""
        has_tree = bool(self.store.manifest.get("tree"))
        if source == "reports" or (source == "auto" and (self.globals.levels or not has_tree)):
            if self.globals.levels:
                return self.globals
            raise InputError(
                f"index {self.path} has no community reports, which global search needs: it was built without "
                "them (`tiny-graphrag build --no-reports`, BuildConfig(reports=False)) or its graph has no "
                "communities. Rebuild it with reports (they need an LLM) or with a tree (`--tree`, whose summaries "
                "global search then maps), or use local or naive search"
            )
        if not self.tree.nodes:  # self.tree names the build option when there is no tree
            raise InputError(f"the tree of {self.path} has no summaries (too few chunks): use naive or tree search")
        return self.tree_globals

    def embed_query(self, query: str) -> np.ndarray:
        return np.asarray(self.embedder.embed([query])[0], dtype=np.float32)

    def with_documents(self, sources: Sources) -> Sources:
        """Name each chunk's document file, page or row and metadata, so a citation leads to a place."""
        chunks = []
        for c in sources.chunks:
            doc = self.document(c.doc_id)
            unit, unit_start = doc.unit_at(c.start, c.end) or ("", 0)
            chunks.append(
                dataclasses.replace(c, source=doc.source, unit=unit, unit_start=unit_start, metadata=doc.metadata)
            )
        return dataclasses.replace(sources, chunks=tuple(chunks))

    def document(self, doc_id: str) -> Document:
        """A document's source, units and metadata (its text left out: many are kept)."""
        if doc_id not in self._docs:
            try:
                self._docs[doc_id] = dataclasses.replace(self.store.document(doc_id), text="")
            except KeyError:
                self._docs[doc_id] = Document(doc_id, "", "")
        return self._docs[doc_id]

    def passages_for(self, query: str, vector: np.ndarray, where: Mapping[str, str] | None = None) -> list[Chunk]:
        """The best chunks of the hybrid ranking for `query` (the small reader's second hop)."""
        return self.store.chunks_by_id(self.hybrid.rank(query, vector, where=where).ids("fused")[:10])

    def title_of(self, chunk: Chunk) -> str:
        """What a reader is told a chunk is from: its document's title (metadata, else the file's
        name) and the page, row or message it lies in ("annual report (p. 12)")."""
        doc = self.document(chunk.doc_id)
        name = doc.metadata.get("title") or document_title(doc.source)
        unit = doc.unit_at(chunk.start, chunk.end)
        return f"{name} ({unit[0]})" if name and unit else name or (unit[0] if unit else "")

    def places(self, chunks: Sequence[Chunk]) -> dict[str, str]:
        """chunk id -> "report.pdf, p. 12" for chunks of documents with pages, rows or messages: the
        context shows it with the text (plain text documents: nothing, as before)."""
        out = {}
        for c in chunks:
            doc = self.document(c.doc_id)
            if (unit := doc.unit_at(c.start, c.end)) is not None:
                out[c.id] = f"{Path(doc.source).name}, {unit[0]}"
        return out
