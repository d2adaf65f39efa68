"""What an index's manifest.json must hold for the library to read it: checked on open, so a
hand-edited or damaged manifest is refused with the fix instead of failing later mid-command."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from tiny_graphrag.errors import IndexFormatError

# Manifest fields the library reads, and their JSON types (a hand-edited manifest is checked on open).
_MANIFEST_FIELDS: dict[str, type] = {
    "files": dict,
    "schema": dict,
    "config": dict,
    "settings": dict,
    "documents": list,
    "counts": dict,
    "summary": dict,
}


def check_manifest(manifest: dict[str, Any], manifest_path: Path) -> None:
    """IndexFormatError when a field the library reads has the wrong JSON type."""
    for key, kind in _MANIFEST_FIELDS.items():
        value = manifest.get(key)
        if value is not None and not isinstance(value, kind):
            raise IndexFormatError(
                f"{manifest_path} is damaged: its '{key}' field is a {type(value).__name__}, not a JSON "
                f"{'object' if kind is dict else 'array'}. Rebuild the index with `tiny-graphrag build ... --force`"
            )
    files = manifest.get("files") or {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise IndexFormatError(
            f"{manifest_path} is damaged: 'files' must map file names to sha256 strings. Rebuild the index "
            "with `tiny-graphrag build ... --force`"
        )


def manifest_field(manifest: dict[str, Any], key: str, index: Path) -> Any:
    """A field an update needs (e.g. "schema"), or IndexFormatError naming it and the fix."""
    if key not in manifest:
        raise IndexFormatError(
            f"the manifest of the index {index} has no '{key}' field (it was edited or damaged), so the index "
            "cannot be updated. It can still be queried; to update it, rebuild it with `tiny-graphrag build "
            "... --force` (force=True)"
        )
    return manifest[key]


def sha256_file(path: Path) -> str:
    """The file's sha256, read in 1 MiB blocks (model files are gigabytes)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
