"""An index you can change: `load_index(path)` and its `add`, `remove` and `sync`.

Each is a `build_index` of the final document set into the same folder with the index's own settings (from its
manifest), so it is atomic (staged, then published; a kill leaves the old version loadable), locked (a second writer
fails with a clear message), resumable (finished model calls are cached) and equal to a fresh build of the same
documents. How the work stays proportional to the change is in sync.py. The handle reads the new version afterwards; a
QueryEngine opened before keeps reading the old one until reopened."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tiny_graphrag.config import BuildConfig, from_dict
from tiny_graphrag.errors import InputError
from tiny_graphrag.index.manifest import manifest_field
from tiny_graphrag.index.placement import check_output
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.indexing.documents import Input, LoadedInputs, collect_documents, input_paths
from tiny_graphrag.indexing.pipeline import build_index
from tiny_graphrag.indexing.result import BuildResult, BuildSummary
from tiny_graphrag.indexing.sync import plan
from tiny_graphrag.schema import Schema

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.outputs.notebook import InlineView

log = logging.getLogger(__name__)

Items = Input | Sequence[Input]


def load_index(path: str | os.PathLike[str]) -> Index:
    """Open a built index (see IndexStore.open) as a handle that can also be updated."""
    return Index.open(path)


class Index(IndexStore):
    """An IndexStore with `add`, `remove` and `sync`; each returns the update's BuildResult, whose
    summary's `changes` says what was added and removed and `model_calls` what it cost.

    Models are built from the index's settings unless `extractor=`, `embedder=` or `llm=` are given (they must then
    match the index's, or the update is refused naming the difference)."""

    # ---- in notebooks (outputs/notebook.py, outputs/view.py): the store itself shows nothing ----
    def _repr_html_(self) -> str:
        from tiny_graphrag.outputs.notebook import index_html

        return index_html(self)

    def view(self, *, level: int = 0, top: int = 200, community: str | None = None, height: int = 640) -> InlineView:
        """The interactive graph view, shown inline in a notebook (see view.py for the options)."""
        from tiny_graphrag.outputs.notebook import InlineView
        from tiny_graphrag.outputs.view import view_html

        return InlineView(view_html(self, level=level, top=top, community=community), height=height)

    def add(self, items: Items, *, progress: bool = False, **models: Any) -> BuildResult:
        """Index new files, directories or texts; a file whose content changed is re-indexed.
        Inputs already indexed are a no-op (logged)."""
        check_output(self.path, input_paths(items))  # an input inside the index would be replaced with it
        known = self.documents()
        loaded = collect_documents(items, config_from_manifest(self.manifest).documents, known)
        change = plan(known, loaded.documents, sync=False)
        for source in change.already_indexed:
            log.info("%s is already indexed: nothing to do for it", source)
        if not change.added:
            log.info("nothing to add: every input is already in %s", self.path)
            return BuildResult(self.path, _unchanged(self))
        return self._update(loaded, sync=False, progress=progress, **models)

    def remove(self, documents: str | Sequence[str], *, progress: bool = False, **models: Any) -> BuildResult:
        """Remove documents, named by id or by source (the path they were indexed from)."""
        docs = self.documents()
        gone: set[str] = set()
        for name in [documents] if isinstance(documents, str) else documents:
            match = [d.id for d in docs if name in (d.id, d.source) or _same_file(name, d.source)]
            if not match:
                raise InputError(
                    f"{name!r} is not a document of the index {self.path}: give a document id or the path it "
                    f"was indexed from (`tiny-graphrag info {self.path} --json` lists them)"
                )
            gone.update(match)
        keep = [d for d in docs if d.id not in gone]
        if not keep:
            raise InputError(
                f"removing {len(gone)} document(s) would leave the index {self.path} empty: an index "
                "needs at least one document (delete the folder to discard it)"
            )
        return self._update(LoadedInputs(keep, ()), sync=True, progress=progress, **models)

    def sync(self, items: Items, *, remove_missing: bool = True, progress: bool = False, **models: Any) -> BuildResult:
        """Make the index hold exactly `items` (with `remove_missing=False`: add and re-index only)."""
        return self._update(items, sync=remove_missing, progress=progress, **models)

    def _update(self, inputs: Items | LoadedInputs, *, sync: bool, progress: bool, **models: Any) -> BuildResult:
        """The one way add, remove and sync change the index: `build_index` of the inputs into it, with its own schema
        and config (the same as `build_index(..., sync=)`); then this handle reads the version that published."""
        schema = Schema.from_dict(manifest_field(self.manifest, "schema", self.path))
        config = config_from_manifest(self.manifest)
        result = build_index(inputs, self.path, schema=schema, config=config, progress=progress, sync=sync, **models)
        self.reload()
        return result


def config_from_manifest(manifest: dict[str, Any]) -> BuildConfig:
    """The BuildConfig an index was built with, from its manifest (sections it lacks: defaults)."""
    return from_dict(BuildConfig, manifest.get("config") or {})


def _same_file(name: str, source: str) -> bool:
    try:
        return os.path.lexists(name) and os.path.samefile(name, source)
    except OSError:
        return False


def _unchanged(store: IndexStore) -> BuildSummary:
    counts = store.manifest.get("counts", {})
    return BuildSummary(
        documents=counts.get("documents", 0),
        chunks=counts.get("chunks", 0),
        reports=counts.get("reports", 0),
        warnings=("every input is already indexed: nothing was changed",),
        changes={
            k: {"added": 0, "removed": 0}
            for k in ("documents", "chunks", "entities", "relations", "communities", "reports")
        },
    )
