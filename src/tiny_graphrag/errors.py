"""Exceptions with messages that name the problem and the fix."""

from __future__ import annotations


class TinyGraphRAGError(Exception):
    """Base class for every error this library raises on purpose."""


class InputError(TinyGraphRAGError, ValueError):
    """A document or argument cannot be used (empty, binary, undecodable, unsupported)."""


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


def require(module: str, extra: str, purpose: str):
    """Import an optional module or raise MissingDependencyError with an install hint."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise MissingDependencyError(
            f"{purpose} needs the Python package '{module}', which is not installed "
            f"({exc}). Install it with: pip install 'tiny-graphrag[{extra}]'"
        ) from exc
