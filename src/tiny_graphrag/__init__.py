"""tiny-graphrag: a small, fully local GraphRAG library.

Importing the package loads no model, torch or spaCy: names are resolved lazily on first use."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tiny_graphrag.config import VERSION as __version__

_EXPORTS = {
    "build_index": "tiny_graphrag.indexing.pipeline",
    "BuildResult": "tiny_graphrag.indexing.result",
    "load_index": "tiny_graphrag.indexing.update",
    "Index": "tiny_graphrag.indexing.update",
    "IndexStore": "tiny_graphrag.index.store",
    "Text": "tiny_graphrag.indexing.documents",
    "QueryEngine": "tiny_graphrag.search.engine",
    "Schema": "tiny_graphrag.schema",
    "RelationType": "tiny_graphrag.schema",
    "BuildConfig": "tiny_graphrag.config",
    "ChunkingConfig": "tiny_graphrag.config",
    "ExtractionConfig": "tiny_graphrag.config",
    "ResolutionConfig": "tiny_graphrag.config",
    "CommunityConfig": "tiny_graphrag.config",
    "LLMConfig": "tiny_graphrag.config",
    "DocumentsConfig": "tiny_graphrag.config",
}

__all__ = sorted(_EXPORTS) + ["__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.config import (
        BuildConfig,
        ChunkingConfig,
        CommunityConfig,
        DocumentsConfig,
        ExtractionConfig,
        LLMConfig,
        ResolutionConfig,
    )
    from tiny_graphrag.index.store import IndexStore
    from tiny_graphrag.indexing.documents import Text
    from tiny_graphrag.indexing.pipeline import build_index
    from tiny_graphrag.indexing.result import BuildResult
    from tiny_graphrag.indexing.update import Index, load_index
    from tiny_graphrag.schema import RelationType, Schema
    from tiny_graphrag.search.engine import QueryEngine


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tiny_graphrag' has no attribute {name!r}")
