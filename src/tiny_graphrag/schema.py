"""The user's domain schema: entity types, relation types and their head/tail constraints.

A schema file (TOML, YAML or JSON) looks like::

    entity_types = ["Person", "Organization", "Location"]

    [relation_types."works for"]
    allowed_head = ["Person"]
    allowed_tail = ["Organization"]

    [relation_types."located in"]          # no constraint lists: any entity types allowed

`relation_types` may also be a plain list of labels. For the spaCy extractor, a table maps spaCy's NER labels to the
schema's entity types (labels not listed are dropped)::

    [spacy_labels]
    PERSON = "Person"
    ORG = "Organization"
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiny_graphrag.errors import MissingDependencyError, SchemaError, listing, require

_TOP_KEYS = {"entity_types", "relation_types", "name", "description", "spacy_labels"}
_RELATION_KEYS = {"allowed_head", "allowed_tail", "description"}


@dataclass(frozen=True)
class RelationType:
    """A relation label; empty allowed_head/allowed_tail mean "any entity type"."""

    label: str
    allowed_head: tuple[str, ...] = ()
    allowed_tail: tuple[str, ...] = ()

    def allows(self, head_type: str, tail_type: str) -> bool:
        return (not self.allowed_head or head_type in self.allowed_head) and (
            not self.allowed_tail or tail_type in self.allowed_tail
        )


@dataclass(frozen=True)
class Schema:
    entity_types: tuple[str, ...]
    relation_types: tuple[RelationType, ...] = ()
    name: str = "custom"
    # spaCy NER label -> entity type, for the spaCy extractor; None: its built-in mapping.
    spacy_labels: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def relation_labels(self) -> tuple[str, ...]:
        return tuple(r.label for r in self.relation_types)

    def relation(self, label: str) -> RelationType | None:
        return next((r for r in self.relation_types if r.label == label), None)

    def allows(self, label: str, head_type: str, tail_type: str) -> bool:
        """True when a relation `label` may link an entity of head_type to one of tail_type."""
        rel = self.relation(label)
        return rel is not None and rel.allows(head_type, tail_type)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "schema") -> Schema:
        if not isinstance(data, Mapping):
            raise SchemaError(f"{origin}: a schema must be a mapping with 'entity_types', got {type(data).__name__}")
        if unknown := set(data) - _TOP_KEYS:
            raise SchemaError(
                f"{origin}: unknown key(s) {listing(sorted(unknown))}; allowed keys are {sorted(_TOP_KEYS)}"
            )
        if "entity_types" not in data:
            raise SchemaError(f"{origin}: 'entity_types' is missing: list the entity labels to extract")
        ents = data["entity_types"]
        if not isinstance(ents, (list, tuple)):
            raise SchemaError(f"{origin}: 'entity_types' must be a list of labels")
        rels_raw = data.get("relation_types", [])
        if isinstance(rels_raw, Mapping):
            rel_items = list(rels_raw.items())
        elif isinstance(rels_raw, (list, tuple)):  # labels alone: any entity types allowed
            rel_items = [(label, {}) for label in rels_raw]
        else:
            raise SchemaError(f"{origin}: 'relation_types' must be a list of labels or a mapping")
        relations = []
        for label, spec in rel_items:
            spec = spec or {}
            if not isinstance(spec, Mapping):
                raise SchemaError(
                    f"{origin}: relation '{label}' must map to {{allowed_head: [...], allowed_tail: [...]}}"
                )
            if bad := set(spec) - _RELATION_KEYS:
                raise SchemaError(
                    f"{origin}: relation '{label}' has unknown key(s) {sorted(bad)}; "
                    f"allowed keys are {sorted(_RELATION_KEYS)}"
                )
            name = _label(label, origin, "relation label")
            sides = [_labels(spec.get(k, []), origin, f"'{label}'.{k}") for k in ("allowed_head", "allowed_tail")]
            relations.append(RelationType(name, *sides))
        spacy_labels = data.get("spacy_labels")
        if spacy_labels is not None:
            if not isinstance(spacy_labels, Mapping):
                raise SchemaError(
                    f"{origin}: 'spacy_labels' must map spaCy labels to entity types, e.g. PERSON = \"Person\""
                )
            spacy_labels = {
                _label(k, origin, "spaCy label"): _label(v, origin, "spaCy label's entity type")
                for k, v in spacy_labels.items()
            }
        return cls(
            entity_types=tuple(_label(x, origin, "entity type") for x in ents),
            relation_types=tuple(relations),
            name=str(data.get("name", "custom")),
            spacy_labels=spacy_labels,
        )

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Schema:
        """Load a schema from a .toml, .yaml/.yml or .json file."""
        path = Path(path)
        if not path.is_file():
            raise SchemaError(
                f"schema file {path} "
                + ("is a folder" if path.is_dir() else "does not exist")
                + f"; pass a .toml/.yaml/.json file or a preset: {', '.join(PRESETS)}"
            )
        suffix = path.suffix.lower()
        try:
            raw = path.read_bytes().decode("utf-8-sig")
            if suffix == ".toml":
                data = read_toml(raw)
            elif suffix in (".yaml", ".yml"):
                data = require("yaml", "yaml", "Reading YAML schemas").safe_load(raw)
            elif suffix == ".json":
                data = json.loads(raw)
            else:
                raise SchemaError(f"schema file {path}: unsupported extension '{suffix}'; use .toml, .yaml or .json")
        except (SchemaError, MissingDependencyError):  # PyYAML missing: the file may be fine, say what to install
            raise
        except UnicodeDecodeError as exc:
            raise SchemaError(f"schema file {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from exc
        except Exception as exc:  # parse errors of the three formats
            raise SchemaError(f"schema file {path} could not be parsed: {str(exc)[:500]}") from exc
        return cls.from_dict(data or {}, origin=str(path))

    @classmethod
    def preset(cls, name: str) -> Schema:
        if name not in PRESETS:
            close = difflib.get_close_matches(name, PRESETS, n=1)
            raise SchemaError(
                f"unknown schema preset '{name}'"
                + (f" (did you mean '{close[0]}'?)" if close else "")
                + f"; presets: {', '.join(PRESETS)}, or a schema file (.toml/.yaml/.json)"
            )
        return cls.from_file(PRESET_DIR / f"{name}.toml")

    @classmethod
    def load(cls, spec: str | os.PathLike[str] | Mapping[str, Any] | Schema | None) -> Schema:
        """A schema from a preset name, a file path, a mapping, or the default (None)."""
        if spec is None:
            return cls.preset("general")
        if isinstance(spec, Schema):
            return spec
        if isinstance(spec, Mapping):
            return cls.from_dict(spec)
        if isinstance(spec, str) and (spec in PRESETS or (not Path(spec).suffix and not Path(spec).exists())):
            return cls.preset(spec)  # a name without a file suffix that is no file: a preset (or a typo of one)
        return cls.from_file(spec)

    def to_dict(self) -> dict[str, Any]:
        extra = {"spacy_labels": dict(self.spacy_labels)} if self.spacy_labels else {}
        return {
            **extra,
            "name": self.name,
            "entity_types": list(self.entity_types),
            "relation_types": {
                r.label: {"allowed_head": list(r.allowed_head), "allowed_tail": list(r.allowed_tail)}
                for r in self.relation_types
            },
        }


def read_toml(text: str) -> dict[str, Any]:
    """TOML text as a dict: the standard library's tomllib (Python 3.10: the same parser as a package, a dependency)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return dict(tomllib.loads(text))


def _label(value: Any, origin: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SchemaError(f"{origin}: every {what} must be a non-empty string, got {str(repr(value))[:100]}")
    return value.strip()


def _labels(values: Any, origin: str, what: str) -> tuple[str, ...]:
    if not isinstance(values, (list, tuple)):
        raise SchemaError(f"{origin}: {what} must be a list of entity types")
    return tuple(_label(v, origin, f"entry of {what}") for v in values)


def _validate(schema: Schema) -> None:
    if not schema.entity_types:
        raise SchemaError("a schema needs at least one entity type")
    for kind, labels in (("entity type", schema.entity_types), ("relation label", schema.relation_labels)):
        seen: set[str] = set()
        for label in labels:
            if not label or not label.strip():
                raise SchemaError(f"empty {kind} in schema '{schema.name}'")
            if label.lower() in seen:
                raise SchemaError(f"duplicate {kind} '{label[:100]}' in schema '{schema.name}' (case is ignored)")
            seen.add(label.lower())
    declared = set(schema.entity_types)
    for rel in schema.relation_types:
        for side, types in (("allowed_head", rel.allowed_head), ("allowed_tail", rel.allowed_tail)):
            if missing := [t for t in types if t not in declared]:
                raise SchemaError(
                    f"relation '{rel.label[:100]}': {side} names {listing(missing)}, which are not declared entity "
                    f"types {listing(schema.entity_types)}; declare them in entity_types or fix the spelling"
                )
    for label, etype in (schema.spacy_labels or {}).items():
        if etype not in declared:
            raise SchemaError(
                f"spacy_labels maps {label} to '{etype[:100]}', which is not a declared entity type "
                f"{listing(schema.entity_types)}; declare it in entity_types or fix the spelling"
            )


PRESET_DIR = Path(__file__).parent / "presets"  # schema files (package data); "general": Tiny GraphRAG's types, first
PRESETS = tuple(sorted((p.stem for p in PRESET_DIR.glob("*.toml")), key=lambda name: (name != "general", name)))
