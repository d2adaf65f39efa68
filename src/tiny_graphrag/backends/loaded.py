"""The one per-process cache of loaded models (GLiNER, GLiREL, spaCy, sentence-transformers, GGUF).

Loading a model costs seconds to minutes and its memory is large, so each (kind, file, settings) key is loaded once per
process and shared. One lock guards the table and is held while loading, so two threads never load the same model
twice."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

_MODELS: dict[tuple[str, Hashable], object] = {}
_LOCK = threading.RLock()  # re-entrant: a loader may load a model it depends on


def cached_model(kind: str, key: Hashable, load: Callable[[], T]) -> T:
    """The model of `kind` under `key`, loaded with `load()` the first time it is asked for."""
    with _LOCK:
        if (kind, key) not in _MODELS:
            started = time.perf_counter()
            _MODELS[(kind, key)] = load()
            log.info("loaded %s model %s in %.1fs", kind, key, time.perf_counter() - started)
        return _MODELS[(kind, key)]  # type: ignore[return-value]


def clear_models(kind: str | None = None) -> None:
    """Forget loaded models (all, or those of one kind): frees memory; the next use loads again."""
    with _LOCK:
        for k in [k for k in _MODELS if kind is None or k[0] == kind]:
            del _MODELS[k]
