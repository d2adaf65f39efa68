"""Reading an index's manifest.json: every field the library reads and every file it lists is checked on open, so a
hand-edited or damaged index is refused with the fix instead of failing later mid-command."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tiny_graphrag.errors import IndexFormatError
from tiny_graphrag.index.placement import DATABASE, MANIFEST, is_unfinished_index

# 2: content-derived citation ids (hids, sids) and the build settings an update checks (issue 14).
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # a version-1 index is queried as before, only not updated
_REBUILD = "Rebuild the index with `tiny-graphrag build ... --force`"

# Manifest fields the library reads, and their JSON types.
_FIELDS: dict[str, type] = dict.fromkeys(("files", "schema", "config", "settings", "counts", "summary"), dict)
_FIELDS["documents"] = list


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the complete index at `path`, or IndexFormatError saying what is wrong and the fix."""
    try:
        return _checked_manifest(path)
    except PermissionError as exc:  # e.g. an index another user wrote with a strict umask
        raise IndexFormatError(
            f"cannot read the index {path}: {exc.filename} is not readable by this user ({exc.strerror}). To fix: "
            f"ask its owner to make it readable (chmod -R a+rX {path}), or build an index of your own"
        ) from exc


def _checked_manifest(path: Path) -> dict[str, Any]:
    if not path.is_dir():
        raise IndexFormatError(
            f"no index at {path}"
            + (" (it is a file)" if path.exists() else "")
            + ": give the folder a build wrote, or build one with `tiny-graphrag build FILE... --out DIR`"
        )
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        if is_unfinished_index(path):
            raise IndexFormatError(
                f"{path} is not a complete index (no {MANIFEST}): its build did not finish. Rerun the "
                f"build with `--out {path} --force`"
            )
        raise IndexFormatError(
            f"{path} is not a tiny-graphrag index (no {MANIFEST}): give the folder a build wrote with --out"
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:  # UnicodeDecodeError included
        raise IndexFormatError(f"{manifest_path} is corrupt ({exc}); rebuild the index") from exc
    version = manifest.get("format_version")
    if version not in READABLE_VERSIONS:
        raise IndexFormatError(
            f"index {path} has format version {version}, this tiny-graphrag reads version "
            f"{FORMAT_VERSION}: rebuild it with `tiny-graphrag build FILE... --out {path} --force` (or use the "
            f"library version {manifest.get('library_version', '?')} that built it)"
        )
    for key, kind in _FIELDS.items():
        value = manifest.get(key)
        if value is not None and not isinstance(value, kind):
            raise IndexFormatError(
                f"{manifest_path} is damaged: its '{key}' field is a {type(value).__name__}, not a JSON "
                f"{'object' if kind is dict else 'array'}. {_REBUILD}"
            )
    files = manifest.get("files") or {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise IndexFormatError(f"{manifest_path} is damaged: 'files' must map file names to sha256 strings. {_REBUILD}")
    if DATABASE not in files:
        raise IndexFormatError(f"{manifest_path} lists no {DATABASE}: it is damaged; rebuild the index")
    # Every file is checked now, so a damaged index is refused before any query reads it.
    for name, digest in files.items():
        if not (path / name).is_file():
            raise IndexFormatError(f"index {path} is incomplete: {name} is missing; rebuild the index")
        if sha256_file(path / name) != digest:
            raise IndexFormatError(
                f"{path / name} does not match the hash in {MANIFEST}: it was modified or damaged after "
                "the build. Rebuild the index with `tiny-graphrag build`"
            )
    return manifest


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
