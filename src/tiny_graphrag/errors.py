"""Exceptions with messages that name the problem and the fix."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType


class TinyGraphRAGError(Exception):
    """Base class for every error this library raises on purpose."""


class InputError(TinyGraphRAGError, ValueError):
    """A document or argument cannot be used (empty, binary, undecodable, unsupported)."""


class OutputError(TinyGraphRAGError, ValueError):
    """An output path cannot be used without risking what is there (not an index, overlaps an input)."""


class ConfigError(TinyGraphRAGError, ValueError):
    """A setting is out of its allowed range; the message names the setting and the range."""


class SchemaError(TinyGraphRAGError, ValueError):
    """An entity/relation schema is invalid."""


class ModelNotFoundError(TinyGraphRAGError, FileNotFoundError):
    """A model file or folder is not where it is expected."""


class ModelLoadError(TinyGraphRAGError, RuntimeError):
    """A model file exists but cannot be loaded (corrupt, wrong format, unsupported)."""


class IndexFormatError(TinyGraphRAGError, RuntimeError):
    """An index directory is missing, incomplete, tampered with or of another format version."""


class MissingDependencyError(TinyGraphRAGError, ImportError):
    """An optional dependency is not installed; the message says which extra to install."""


def listing(items: Iterable[object], limit: int = 10) -> str:
    """A list for a message, cut after `limit` items so a huge input never makes a huge line."""
    texts = [str(x) for x in items]
    shown = ", ".join(repr(x) if len(x) <= 80 else repr(x[:77] + "...") for x in texts[:limit])
    return f"[{shown}{f', ... ({len(texts)} in all)' if len(texts) > limit else ''}]"


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import an optional module or raise MissingDependencyError with an install hint."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise MissingDependencyError(
            f"{purpose} needs the Python package '{module}', which is not installed "
            f"({exc}). Install it with: pip install 'tiny-graphrag[{extra}]'"
        ) from exc
