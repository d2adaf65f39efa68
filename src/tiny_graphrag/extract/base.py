"""The contract every extractor meets, the factory, and helpers shared by the implementations.

Everything here is plain Python: importing this module loads no model, torch or spaCy."""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tqdm.auto import tqdm

from tiny_graphrag.errors import InputError
from tiny_graphrag.records import Chunk, EntityMention, Extraction, RelationMention
from tiny_graphrag.schema import Schema

if TYPE_CHECKING:  # pragma: no cover
    import os

    from tiny_graphrag.config import ExtractionConfig


@runtime_checkable
class Extractor(Protocol):
    """Finds typed entity mentions and relations in chunks: `extract` returns one Extraction per chunk, in their order.
    `describe()` returns JSON-serialisable facts that change the output (model paths and fingerprints, thresholds,
    schema): it goes into the index manifest and into cache keys."""

    name: str

    def extract(self, chunks: Sequence[Chunk], *, progress: bool = False) -> list[Extraction]: ...

    def describe(self) -> dict[str, Any]: ...


# name -> "module:Class". Strings keep the factory import-free until an extractor is chosen;
# `register_extractor` lets a later backend (e.g. an LLM extractor) plug in without edits here.
_REGISTRY: dict[str, str | Callable[..., Extractor]] = {
    "gliner": "tiny_graphrag.extract.gliner:GlinerGlirelExtractor",
    "spacy": "tiny_graphrag.extract.spacy_ner:SpacyExtractor",
}


def register_extractor(name: str, factory: str | Callable[..., Extractor]) -> None:
    """Make `ExtractionConfig(extractor=name)` build `factory(schema, config, models_dir)`."""
    _REGISTRY[name] = factory


def extractor_names() -> list[str]:
    """The names `make_extractor` accepts: the built-ins first, then registered ones in order."""
    return list(_REGISTRY)


def make_extractor(
    schema: Schema, config: ExtractionConfig, models_dir: str | os.PathLike[str] | None = None
) -> Extractor:
    """The extractor named by `config.extractor`, built for `schema`."""
    if (factory := _REGISTRY.get(config.extractor)) is None:
        raise InputError(
            f"unknown extractor '{config.extractor}'; choose one of {extractor_names()} "
            "(or add yours with register_extractor)"
        )
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory(schema, config, models_dir=models_dir)


Relations = list[list[RelationMention]]


def length_buckets(lengths: Sequence[int], size: int) -> list[list[int]]:
    """Indices grouped into batches of at most `size` items of similar length, longest first.

    A batch is padded to its longest text, so mixing a 256-word chunk with a 40-word tail makes the model encode 216
    words of padding. Sorting by length and closing a batch when the next text is shorter than 80% of the batch's
    longest bounds that waste. Attention masks hide the padding: the outputs do not change, only the order of work."""
    if size < 1:
        raise ValueError(f"batch_size must be at least 1, got {size}")
    batches: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        if batches and len(batches[-1]) < size and lengths[i] >= 0.8 * lengths[batches[-1][0]]:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def extract_batches(
    chunks: Sequence[Chunk],
    batch_size: int,
    find: Callable[[list[str]], tuple[list[list[EntityMention]], Relations]],
    *,
    progress: bool,
    desc: str,
    bucket: bool = False,
) -> list[Extraction]:
    """One Extraction per chunk, in the order of `chunks`: `find` gets the texts of each batch
    and returns, per text, its entity mentions and the relations between them. With `bucket`,
    batches group texts of similar length (see `length_buckets`)."""
    if bucket:
        groups = length_buckets([len(c.text) for c in chunks], batch_size)
    elif batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    else:  # consecutive slices, in input order
        groups = [list(range(i, min(i + batch_size, len(chunks)))) for i in range(0, len(chunks), batch_size)]
    results: dict[int, Extraction] = {}
    with tqdm(total=len(chunks), disable=not progress, desc=desc, unit="chunk", leave=False) as bar:
        for group in groups:
            mentions, relations = find([chunks[i].text for i in group])
            for i, ms, rs in zip(group, mentions, relations):
                results[i] = Extraction(chunk_id=chunks[i].id, entities=tuple(ms), relations=tuple(rs))
            bar.update(len(group))
    return [results[i] for i in range(len(chunks))]


def dedupe_mentions(mentions: Iterable[EntityMention]) -> list[EntityMention]:
    """Non-overlapping mentions sorted by position. Overlaps are resolved greedily by score, then length (longer first),
    then position, so the result does not depend on input order; exact duplicates collapse to the best one."""
    ranked = sorted(mentions, key=lambda m: (-m.score, -(m.end - m.start), m.start, m.type))
    kept: list[EntityMention] = []
    for m in ranked:
        if m.end > m.start and all(m.end <= k.start or m.start >= k.end for k in kept):
            kept.append(m)
    return sorted(kept, key=lambda m: (m.start, m.end))


def enforce_constraints(relations: Iterable[RelationMention], schema: Schema) -> list[RelationMention]:
    """The relations the schema allows between their mention types, without those linking an
    entity to itself (the same span, or the same text and type)."""
    kept = []
    for rel in relations:
        h, t = rel.head, rel.tail
        same_span = (h.start, h.end) == (t.start, t.end)
        same_entity = h.type == t.type and h.text.casefold() == t.text.casefold()
        if schema.allows(rel.label, h.type, t.type) and not (same_span or same_entity):
            kept.append(rel)
    return kept


def best_label_per_pair(relations: Iterable[RelationMention]) -> list[RelationMention]:
    """The highest-scoring relation (on a tie, the label first in sort order) for each ordered (head, tail) pair, in
    text order. Zero-shot relation models score every label for every pair; like GLiREL's own top_k=1 we keep one label
    per pair. Apply after `enforce_constraints`, so that a disallowed top label does not hide an allowed runner-up."""
    best: dict[tuple[int, int, int, int], RelationMention] = {}
    for rel in sorted(relations, key=lambda r: (-r.score, r.label)):
        best.setdefault((rel.head.start, rel.head.end, rel.tail.start, rel.tail.end), rel)
    return [best[k] for k in sorted(best)]


def type_partners(schema: Schema) -> dict[str, set[str]]:
    """Entity type -> the types it can meet in a relation the schema allows (either direction)."""
    types = set(schema.entity_types)
    labels = [r.label for r in schema.relation_types]
    return {
        t: {u for u in types if any(schema.allows(lbl, t, u) or schema.allows(lbl, u, t) for lbl in labels)}
        for t in types
    }


def pairable(mentions: Sequence[EntityMention], partners: Mapping[str, set[str]]) -> set[int]:
    """ids of the mentions that have a partner (another mention of an allowed type) in `mentions`."""
    types = Counter(m.type for m in mentions)
    return {
        id(m) for m in mentions if any(u != m.type or n > 1 for u, n in types.items() if u in partners.get(m.type, ()))
    }


def check_extraction(chunk: Chunk, extraction: Extraction) -> None:
    """Assert the invariants every extractor promises (cheap; used by tests and debug runs)."""
    mentions = set(extraction.entities)
    for m in extraction.entities:
        if chunk.text[m.start : m.end] != m.text:
            raise AssertionError(f"mention {m} does not match chunk {chunk.id} text at its offsets")
    for r in extraction.relations:
        if r.head not in mentions or r.tail not in mentions:
            raise AssertionError(f"relation {r} links a mention that is not in the extraction")
