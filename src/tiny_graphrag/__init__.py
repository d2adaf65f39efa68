"""tiny-graphrag: a small, fully local GraphRAG library.

Importing the package loads no model, torch or spaCy: names are resolved lazily on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "build_index": "tiny_graphrag.build",
    "BuildResult": "tiny_graphrag.build",
    "load_index": "tiny_graphrag.update",
    "Index": "tiny_graphrag.update",
    "IndexStore": "tiny_graphrag.store",
    "QueryEngine": "tiny_graphrag.search.engine",
    "Schema": "tiny_graphrag.schema",
    "RelationType": "tiny_graphrag.schema",
    "BuildConfig": "tiny_graphrag.config",
    "ChunkingConfig": "tiny_graphrag.config",
    "ExtractionConfig": "tiny_graphrag.config",
    "ResolutionConfig": "tiny_graphrag.config",
    "CommunityConfig": "tiny_graphrag.config",
    "LLMConfig": "tiny_graphrag.config",
}

__all__ = sorted(_EXPORTS) + ["__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from .build import BuildResult, build_index
    from .config import BuildConfig, ChunkingConfig, CommunityConfig, ExtractionConfig, LLMConfig, ResolutionConfig
    from .schema import RelationType, Schema
    from .search.engine import QueryEngine
    from .store import IndexStore
    from .update import Index, load_index


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tiny_graphrag' has no attribute {name!r}")
