"""Search over a built index: QueryEngine with local, global, naive and tree search.

Names are resolved lazily, so importing this package loads no model, torch or scipy."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "QueryEngine": "tiny_graphrag.search.engine",
    "SearchResult": "tiny_graphrag.search.result",
    "StreamingResult": "tiny_graphrag.search.result",
    "Sources": "tiny_graphrag.search.result",
    "Usage": "tiny_graphrag.search.result",
    "SearchConfig": "tiny_graphrag.search.config",
    "LocalConfig": "tiny_graphrag.search.config",
    "GlobalConfig": "tiny_graphrag.search.config",
    "NaiveConfig": "tiny_graphrag.search.config",
    "FusionConfig": "tiny_graphrag.search.config",
    "reciprocal_rank_fusion": "tiny_graphrag.search.hybrid",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tiny_graphrag.search' has no attribute {name!r}")
