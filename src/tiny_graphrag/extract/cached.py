"""Extraction with a per-chunk cache: a rerun (or an update) extracts only chunks it has not seen.

Results are stored as they arrive, in slices or streamed from an executor (Ray actors), so a crash keeps every finished
chunk. The stored form is plain JSON, which executors also send."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from tqdm import tqdm

from tiny_graphrag.config import VERSION
from tiny_graphrag.extract.base import Extractor
from tiny_graphrag.index.cache import CallCache, cache_key
from tiny_graphrag.records import Chunk, EntityMention, Extraction, RelationMention

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.backends.embed import TextEmbedder


class Executor(Protocol):
    """Runs extraction (and embedding) somewhere else, e.g. distributed.RayExecutor."""

    def extract(self, extractor: Extractor, chunks: Sequence[Chunk]) -> Iterator[tuple[int, Extraction]]:
        """(position in `chunks`, its extraction), in any order, as each is done."""

    def embedder(self, embedder: TextEmbedder, chunk_text: Callable[[Chunk], str]) -> TextEmbedder:
        """`embedder`, running where the executor runs; `chunk_text` is what the build embeds for a chunk (its text with
        its document's title), so an executor that embeds chunks as it extracts them embeds exactly that."""


def extract_cached(
    extractor: Extractor,
    chunks: Sequence[Chunk],
    cache: CallCache,
    calls: dict[str, int],
    progress: bool,
    executor: Executor | None = None,
) -> list[Extraction]:
    fingerprint = repr(sorted(extractor.describe().items())) + VERSION  # a new release may extract differently
    keys = [cache_key("extract", fingerprint, c.text) for c in chunks]
    hits = [cache.get(key) for key in keys]
    found = {i: extraction_from_json(c.id, hit) for i, (c, hit) in enumerate(zip(chunks, hits)) if hit is not None}
    todo = [i for i in range(len(chunks)) if i not in found]
    calls["extraction_cached"], calls["extraction"] = len(found), len(todo)
    step = 64  # extracted in slices (or streamed from the executor) so a crash keeps finished chunks in the cache
    if executor is not None:
        done = ((todo[j], ex) for j, ex in executor.extract(extractor, [chunks[i] for i in todo]))
    else:
        done = (
            (i, ex)
            for s in range(0, len(todo), step)
            for i, ex in zip(todo[s : s + step], extractor.extract([chunks[i] for i in todo[s : s + step]]))
        )
    with tqdm(
        total=len(todo), desc=f"extracting ({extractor.name})", unit="chunk", disable=not progress, leave=False
    ) as bar:
        for i, ex in done:
            cache.put(keys[i], extraction_to_json(ex))
            found[i] = ex
            bar.update(1)
    return [found[i] for i in range(len(chunks))]


def _mention_json(m: EntityMention) -> list:
    return [m.text, m.type, m.start, m.end, m.score]


def extraction_to_json(ex: Extraction) -> dict:
    index = {id(m): i for i, m in enumerate(ex.entities)}

    def ref(m: EntityMention) -> int | list:  # a relation's mention: its position in entities, else itself
        return index[id(m)] if id(m) in index else _mention_json(m)

    return {
        "entities": [_mention_json(m) for m in ex.entities],
        "relations": [[ref(r.head), ref(r.tail), r.label, r.score] for r in ex.relations],
    }


def extraction_from_json(chunk_id: str, data: dict) -> Extraction:
    ents = tuple(EntityMention(*m) for m in data["entities"])

    def mention(x):
        return ents[x] if isinstance(x, int) else EntityMention(*x)

    rels = tuple(RelationMention(mention(h), mention(t), label, score) for h, t, label, score in data["relations"])
    return Extraction(chunk_id=chunk_id, entities=ents, relations=rels)
