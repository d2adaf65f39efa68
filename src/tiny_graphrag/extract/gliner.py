"""GLiNER for typed entities, GLiREL for typed relations, through their batch APIs.

We call the models directly rather than through their spaCy wrappers: the wrappers can drop all entities silently,
ignore thresholds and run one document at a time. Models load once per process (cache keyed by path, device and dtype)
on first use, never at import time."""

from __future__ import annotations

import argparse
import functools
import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiny_graphrag.backends.files import file_fingerprint, load_error, refetch_hint, resolve_model
from tiny_graphrag.backends.files import models_dir as default_models_dir
from tiny_graphrag.backends.loaded import cached_model, clear_models
from tiny_graphrag.errors import ModelLoadError, require
from tiny_graphrag.extract.base import (
    Relations,
    best_label_per_pair,
    dedupe_mentions,
    enforce_constraints,
    extract_batches,
    pairable,
    type_partners,
)
from tiny_graphrag.extract.glirel_input import glirel_relations
from tiny_graphrag.extract.runtime import Runtime, optimized, runtime_for
from tiny_graphrag.finetune.data import char_to_words
from tiny_graphrag.finetune.labels import recorded_threshold, warn_zero_shot
from tiny_graphrag.finetune.type_head import TypeHead, gliner_entities
from tiny_graphrag.indexing.chunking import WORD_RE
from tiny_graphrag.records import Chunk, EntityMention, Extraction, RelationMention
from tiny_graphrag.schema import Schema

if TYPE_CHECKING:  # pragma: no cover
    import os

    from tiny_graphrag.config import ExtractionConfig

log = logging.getLogger(__name__)


def clear_model_cache() -> None:
    """Forget the loaded GLiNER and GLiREL models (frees memory; the next use loads again)."""
    clear_models("gliner")
    clear_models("glirel")


def _key(path: Path, rt: Runtime) -> tuple[str, str, bool, str | None, bool]:
    return str(path.resolve()), rt.device, rt.half, rt.quantize, rt.onnx


_fingerprint = functools.cache(file_fingerprint)  # a model folder's, once per process


def model_facts(path: Path, package: str, **threshold: float) -> dict[str, Any]:
    """What of a model changes its output, for describe(): its folder, a fingerprint of its files
    (computed once per process), its threshold and the version of the package that runs it."""
    try:
        version: str | None = metadata.version(package)
    except metadata.PackageNotFoundError:
        version = None
    return {"path": str(path), "fingerprint": _fingerprint(path.resolve()), **threshold, f"{package}_version": version}


def load_gliner(path: Path, rt: Runtime) -> Any:
    """A GLiNER model from a local folder (cached per process)."""

    def load() -> Any:
        gliner = require("gliner", "gliner", "GLiNER entity extraction")
        if not (path / "gliner_config.json").is_file():
            raise ModelLoadError(
                f"{path} is not a GLiNER model folder: it has no gliner_config.json. To fix: {refetch_hint(path)}"
            )
        try:
            # local_files_only also reaches the backbone tokenizer GLiNER may load by name
            model = gliner.GLiNER.from_pretrained(str(path), local_files_only=True, map_location=rt.device)
            return optimized(model, rt, "gliner")
        except Exception as exc:
            raise load_error(
                "GLiNER",
                path,
                exc,
                device=rt.device,
                fix="A folder without tokenizer files needs its backbone (model_name in gliner_config.json) "
                f"in the Hugging Face cache. The folder may also be incomplete or corrupt: {refetch_hint(path)}.",
            ) from exc

    return cached_model("gliner", _key(path, rt), load)


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers while GLiREL rebuilds its encoder: resizing the backbone's embeddings
    makes it warn how the new rows are initialised, and the checkpoint overwrites them right after."""
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def glirel_backbone(name: str, model_dir: Path, models_dir: Path) -> Path:
    """The local folder of GLiREL's backbone (tokenizer + config).

    GLiREL rebuilds its encoder with `AutoModel.from_pretrained(model_name)`, which would go to the hub for a model id;
    it gets a folder instead: the path as saved, relative to the model folder, a `backbone/` folder inside it,
    `<models_dir>/<last part of the name>`, or the Hugging Face cache's copy."""
    for c in (Path(name).expanduser(), model_dir / name, model_dir / "backbone", models_dir / Path(name).name):
        if (c / "config.json").is_file():
            return c
    from huggingface_hub import try_to_load_from_cache  # optional, comes with transformers

    try:
        found = try_to_load_from_cache(name, "config.json")  # a snapshot folder's config, if cached
    except ValueError:  # not a hub model id (e.g. a path that no longer exists)
        found = None
    if isinstance(found, str):
        return Path(found).parent
    raise ModelLoadError(
        f"could not load the GLiREL model at {model_dir}: it rebuilds its encoder from the backbone '{name}' "
        "(model_name in glirel_config.json), which is not on this machine. To fix: put that model's folder at "
        f"{model_dir / 'backbone'} or {models_dir / Path(name).name}, or in the Hugging Face cache."
    )


def load_glirel(path: Path, rt: Runtime, models_dir: str | os.PathLike[str] | None = None) -> Any:
    """A GLiREL model from a local folder (cached per process).

    We read glirel_config.json and the weights ourselves instead of `GLiREL.from_pretrained`: that lets us point
    `model_name` at a local backbone, and avoids from_pretrained's incompatibility with huggingface_hub>=1 (it passes
    the removed `proxies`/`resume_download`)."""

    def load() -> Any:
        torch = require("torch", "gliner", "GLiREL relation extraction")
        glirel = require("glirel", "gliner", "GLiREL relation extraction")
        config_file, weights = path / "glirel_config.json", path / "pytorch_model.bin"
        for f in (config_file, weights):
            if not f.is_file():
                raise ModelLoadError(
                    f"{path} is not a GLiREL model folder: {f.name} is missing. To fix: {refetch_hint(path)}"
                )
        try:
            config = argparse.Namespace(**json.loads(config_file.read_text(encoding="utf-8")))
        except (ValueError, TypeError) as exc:
            raise load_error("GLiREL", path, exc, device=rt.device) from exc
        backbone = glirel_backbone(str(config.model_name), path, default_models_dir(models_dir))
        config.model_name = str(backbone)
        # We always pass one fixed label list for the whole batch; with False GLiREL would read a label list per text.
        config.fixed_relation_types = True
        config.device = rt.device
        try:
            # fork_rng: building the model resizes embeddings with random values (overwritten by
            # the checkpoint); keep the caller's torch RNG state untouched.
            with torch.random.fork_rng(devices=[]), _quiet_transformers():
                model = glirel.GLiREL(config)
        except Exception as exc:
            raise load_error(
                "GLiREL",
                path,
                exc,
                device=rt.device,
                fix=f"GLiREL rebuilds its encoder from the backbone at {backbone} (model_name in "
                f"glirel_config.json) before loading its weights: that folder may be incomplete or corrupt.",
            ) from exc
        try:
            state = torch.load(weights, map_location="cpu", weights_only=True)
            result = model.load_state_dict(state, strict=False)
            model = optimized(model.to(rt.device), rt, "glirel")
        except Exception as exc:
            raise load_error("GLiREL", path, exc, device=rt.device) from exc
        if result.missing_keys:
            log.warning(
                "GLiREL checkpoint %s lacks %d parameters (e.g. %s); they stay random",
                weights,
                len(result.missing_keys),
                result.missing_keys[:3],
            )
        return model

    return cached_model("glirel", _key(path, rt), load)


def word_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of the words GLiREL reads (its default splitter: WORD_RE)."""
    return [(m.start(), m.end()) for m in WORD_RE.finditer(text)]


def _token_spans(
    words: list[tuple[int, int]], mentions: Sequence[EntityMention]
) -> dict[tuple[int, int], EntityMention]:
    """(first word, last word) -> mention, the first mention of each token span."""
    spans: dict[tuple[int, int], EntityMention] = {}
    for m in mentions:
        if (span := char_to_words(words, m.start, m.end)) is not None:
            spans.setdefault(span, m)
    return spans


def _pairs_independent(config: Any) -> bool:
    """Whether GLiREL scores each mention pair from that pair alone (then the other mentions sent with it do not change
    its score). Refinement layers attend across all pairs, and entity markers (GLiREL's or our typed ones) are inserted
    into the encoder's input, so either makes the mentions interact."""
    fields = ("refine_relation", "refine_prompt", "add_entity_markers", "typed_markers")
    return not any(getattr(config, f, False) for f in fields)


class GlirelRelations:
    """GLiREL over mentions found by another model; shared by the GLiNER and spaCy extractors."""

    def __init__(
        self, schema: Schema, config: ExtractionConfig, path: Path, models_dir: str | os.PathLike[str] | None = None
    ):
        self.schema = schema
        self.labels = list(schema.relation_labels)
        self.threshold = float(config.relation_threshold)
        self.path = path
        self._config = config
        self._models_dir = models_dir
        self._partners = type_partners(schema)
        self.prune = True  # send GLiREL only mentions that can be in an allowed relation (False: all)

    def _model(self) -> Any:
        return load_glirel(self.path, runtime_for(self._config), self._models_dir)

    def describe(self) -> dict[str, Any]:
        return model_facts(self.path, "glirel", relation_threshold=self.threshold)

    def _pairable(self, spans: dict[tuple[int, int], EntityMention]) -> dict[tuple[int, int], EntityMention]:
        """The spans whose mention can be in an allowed relation with another one of the chunk.
        A chunk left with fewer than two skips GLiREL (enforce_constraints would drop all it finds);
        fewer mentions leave the others' scores alone when pairs are scored alone (_pairs_independent)."""
        keep = pairable(list(spans.values()), self._partners)
        return {k: m for k, m in spans.items() if id(m) in keep}

    def predict(self, texts: Sequence[str], mentions: Sequence[Sequence[EntityMention]]) -> list[list[RelationMention]]:
        """Relations for each text between its given mentions (same objects), schema-checked."""
        out: list[list[RelationMention]] = [[] for _ in texts]
        if not self.labels:
            return out
        words = [word_spans(text) for text in texts]
        all_spans = [_token_spans(w, ms) for w, ms in zip(words, mentions)]
        sent = [self._pairable(spans) for spans in all_spans] if self.prune else all_spans
        index = [i for i, spans in enumerate(sent) if len(spans) >= 2]  # a pair to classify (GLiREL fails on none)
        if not index:
            return out
        model = self._model()
        if self.prune and not _pairs_independent(model.config):
            # GLiREL would read the mentions jointly: pruning could change scores, so keep them all.
            sent = all_spans
        tokens = [[texts[i][s:e] for s, e in words[i]] for i in index]
        spans = [[(s, e, m.type) for (s, e), m in sorted(sent[i].items())] for i in index]
        found_per_text = glirel_relations(model, tokens, spans, self.labels, self.threshold, self.schema.allows)
        # GLiREL's own max_entity_pair_distance keeps every pair in one direction whatever their
        # distance (its coreference pairs): a model trained on sentences then links mentions far apart
        far = getattr(model.config, "max_entity_pair_distance", None)
        for i, rels in zip(index, found_per_text):
            found = [
                RelationMention(head=sent[i][h], tail=sent[i][t], label=label, score=score)
                for h, t, label, score in rels
                if far is None or abs(h[0] - t[0]) <= far
            ]
            out[i] = best_label_per_pair(enforce_constraints(found, self.schema))
        return out


class GlinerGlirelExtractor:
    """Entities of the schema's types with GLiNER, relations of its labels with GLiREL."""

    name = "gliner"

    def __init__(self, schema: Schema, config: ExtractionConfig, models_dir: str | os.PathLike[str] | None = None):
        self.schema = schema
        self.config = config
        # Resolve paths now so that a missing model fails before any work is done.
        self.gliner_path = resolve_model(config.gliner_model, kind="gliner", models_dir_=models_dir)
        # a model from `models finetune` records its labels: say which schema labels it never saw
        warn_zero_shot(self.gliner_path, schema.entity_types, "GLiNER")
        self.type_head = TypeHead.load(self.gliner_path, models_dir)  # `models finetune` fits one
        threshold = config.entity_threshold  # None: the one the model records (its type head's), else 0.5
        self.entity_threshold = recorded_threshold(self.gliner_path) if threshold is None else threshold
        self.relations: GlirelRelations | None = None
        self.bucket = True  # length-bucketed batches (base.length_buckets); False: chunks in input order
        if schema.relation_types:
            glirel_path = resolve_model(config.glirel_model, kind="glirel", models_dir_=models_dir)
            self.relations = GlirelRelations(schema, config, glirel_path, models_dir)
            warn_zero_shot(glirel_path, schema.relation_labels, "GLiREL")
        else:
            log.info("schema '%s' has no relation types: extracting entities only", schema.name)

    def describe(self) -> dict[str, Any]:
        return {
            "extractor": self.name,
            "gliner_model": model_facts(self.gliner_path, "gliner", entity_threshold=self.entity_threshold),
            "glirel_model": self.relations.describe() if self.relations else None,
            "dtype": runtime_for(self.config).dtype,
            "schema": self.schema.to_dict(),
        }

    def entities(self, texts: Sequence[str]) -> list[list[EntityMention]]:
        """GLiNER mentions of the schema's types for each text (one batched call)."""
        model = load_gliner(self.gliner_path, runtime_for(self.config))
        labels = list(self.schema.entity_types)
        found = gliner_entities(model, self.type_head, texts, labels, float(self.entity_threshold), max(1, len(texts)))
        return [
            dedupe_mentions(
                EntityMention(text=text[start:end], type=label, start=start, end=end, score=score)
                for start, end, label, score in ents
                if label in labels  # only the schema's types
            )
            for text, ents in zip(texts, found)
        ]

    def _find(self, texts: list[str]) -> tuple[list[list[EntityMention]], Relations]:
        mentions = self.entities(texts)
        return mentions, self.relations.predict(texts, mentions) if self.relations else [[] for _ in texts]

    def extract(self, chunks: Sequence[Chunk], *, progress: bool = False) -> list[Extraction]:
        results = extract_batches(
            chunks,
            self.config.batch_size,
            self._find,
            progress=progress,
            desc="extracting (GLiNER+GLiREL)",
            bucket=self.bucket,
        )
        log.debug(
            "extracted %d chunks: %d mentions, %d relations",
            len(results),
            sum(len(r.entities) for r in results),
            sum(len(r.relations) for r in results),
        )
        return results
