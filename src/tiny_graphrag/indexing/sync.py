"""Updating an existing index: the final document set, the settings that must match, what changed.

An update is a build of the final document set in which every model call on unchanged content is answered by the call
cache (extraction per chunk text, embedding per text, a report per prompt). Ids are content-derived (records.short_ids,
communities' member hashes), so an unchanged community's report prompt is the same request and hits the cache. The
result equals a fresh build of the same documents by construction, and model calls follow what changed; only the cheap
stages (graph, resolution, Leiden) run over the whole corpus again. RAPTOR summaries are keyed by their children's
content the same way."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tiny_graphrag.errors import ConfigError, IndexFormatError
from tiny_graphrag.index.manifest import FORMAT_VERSION
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.indexing.documents import RAW_TEXT
from tiny_graphrag.records import Document

# Config fields that say where or how fast something runs, or which files are too big to read, not what
# is built: they may differ between a build and its update. Model names are covered by their files' fingerprints.
_NOT_SETTINGS = set(
    """device batch_size half_precision n_gpu_layers n_threads models_dir cache_dir model gliner_model glirel_model
    spacy_model embedder_model max_unpacked_mb entity_threshold""".split()  # the extractor describes the one it uses
)


@dataclass(frozen=True)
class Plan:
    documents: list[Document]  # the final set: the index's order, then new inputs in their order
    added: tuple[str, ...]  # ids
    removed: tuple[str, ...]  # ids (a changed file's old version included)
    already_indexed: tuple[str, ...]  # sources of inputs the index already holds unchanged


def previous_index(out_dir: Path) -> IndexStore:
    """The index an update starts from, refused when it predates updatable indexes."""
    store = IndexStore.open(out_dir)
    if store.manifest.get("format_version") != FORMAT_VERSION or "settings" not in store.manifest:
        store.close()
        raise IndexFormatError(
            f"the index {out_dir} has format version {store.manifest.get('format_version')} (tiny-graphrag "
            f"{store.manifest.get('library_version', '?')}); only version {FORMAT_VERSION} indexes can be updated. "
            "It can still be queried; to update it, rebuild it once with --force (force=True)"
        )
    return store


def plan(old: Sequence[Document], new: Sequence[Document], *, sync: bool, unread: Sequence[str] = ()) -> Plan:
    """The documents after updating `old` with `new`: a file whose content changed replaces its old
    version; with `sync`, the inputs are the whole set (documents not among them are removed),
    except that a file that could not be read now (`unread`) keeps the version the index holds."""
    old_ids, new_ids = {d.id for d in old}, {d.id for d in new}
    new_files = {d.source for d in new if not d.source.startswith(RAW_TEXT)}
    if sync:
        final = list(new) + [d for d in old if d.source in set(unread) and d.id not in new_ids]
    else:
        kept = [d for d in old if d.id in new_ids or d.source not in new_files]
        final = kept + [d for d in new if d.id not in old_ids]
    final_ids = {d.id for d in final}
    return Plan(
        documents=final,
        added=tuple(d.id for d in final if d.id not in old_ids),
        removed=tuple(d.id for d in old if d.id not in final_ids),
        already_indexed=tuple(d.source for d in new if d.id in old_ids),
    )


def settings(
    schema: Mapping[str, Any],
    config: Any,
    extractor: Mapping[str, Any],
    embedder: Mapping[str, Any],
    llm: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The flat settings an index's content depends on: schema, config, and model fingerprints."""
    conf = {
        k: v
        for k, v in _flat(asdict(config)).items()
        if not _ignored(f"config.{k}") and not (k.startswith("documents.") and v in ((), [], None))  # unset: as before
    }
    parts = {
        "schema": schema,
        "config": conf,
        "extractor": extractor,
        "embedder": {"fingerprint": embedder.get("fingerprint")},
        "llm": {"fingerprint": llm.get("fingerprint")} if llm else None,
    }
    flat = _flat(json.loads(json.dumps(parts, default=str)))  # tuples -> lists, as the manifest holds them
    return {k: v for k, v in flat.items() if k.rsplit(".", 1)[-1] != "path"}


def check_settings(index: IndexStore, given: Mapping[str, Any], only: tuple[str, ...] = ("",)) -> None:
    """Refuse an update whose settings (those starting with one of `only`) differ from the index's,
    naming each difference."""
    held = {k: v for k, v in index.manifest["settings"].items() if not _ignored(k)}  # older indexes compared more
    diff = [k for k in sorted(set(held) | set(given)) if k.startswith(only) and held.get(k) != given.get(k)]
    if diff:
        shown = "; ".join(f"{k}: index has {held.get(k)!r}, given {given.get(k)!r}" for k in diff[:5])
        more = f" (and {len(diff) - 5} more)" if len(diff) > 5 else ""
        raise ConfigError(
            f"the index {index.path} was built with other settings, so it cannot be updated with these: {shown}{more}. "
            "Use the index's settings, or rebuild it from scratch with the new ones (--force, or force=True)"
        )


def changes(old: IndexStore, new: IndexStore, model_calls: Mapping[str, int]) -> dict[str, Any]:
    """What an update changed: added/removed documents, chunks, entities, relations, communities, reports."""

    def diff(a: set, b: set) -> dict[str, int]:
        return {"added": len(b - a), "removed": len(a - b)}

    og, ng = old.graph(), new.graph()
    return {
        "documents": diff({d.id for d in old.documents()}, {d.id for d in new.documents()}),
        "chunks": diff(set(old.source_ids()), set(new.source_ids())),
        "entities": diff(set(og.nodes), set(ng.nodes)),
        "relations": diff(set(og.edges(keys=True)), set(ng.edges(keys=True))),
        "communities": diff({c.id for c in old.communities()}, {c.id for c in new.communities()}),
        # a report is "added" when its community or its text is new: written anew, not kept
        "reports": diff(
            {(r.community_id, r.text()) for r in old.reports()}, {(r.community_id, r.text()) for r in new.reports()}
        ),
        "report_model_calls": model_calls.get("llm", 0),  # reports that missed the cache (retries count)
    }


def _ignored(key: str) -> bool:
    return key.startswith("config.") and key.rsplit(".", 1)[-1] in _NOT_SETTINGS


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(data, dict) or not data:
        return {prefix: data} if prefix else {}
    out: dict[str, Any] = {}
    for k, v in data.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    return out
