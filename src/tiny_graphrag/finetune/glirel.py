"""Fine-tune and evaluate GLiREL (relations between given entities) with the library's own model,
collator (negative label sampling) and loss."""

from __future__ import annotations

import argparse
import json
import logging
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiny_graphrag.backends.files import models_dir
from tiny_graphrag.errors import require
from tiny_graphrag.extract.gliner import glirel_backbone
from tiny_graphrag.extract.glirel_input import glirel_relations, mark_types
from tiny_graphrag.finetune.data import Example, Relation, Span, to_glirel
from tiny_graphrag.finetune.loop import Trainable, TrainResult, TrainSettings, loading, sample_labels, train_and_save
from tiny_graphrag.finetune.score import Evaluator

if TYPE_CHECKING:  # pragma: no cover
    import torch


# Field values follow the published glirel-large-v0 training config (as tests/devmodels.py does),
# except those the recipe passes.
_CONFIG = dict(
    fine_tune=True,
    subtoken_pooling="first",
    scorer="dot",
    rel_mode="marker",
    span_marker_mode="markerv1",
    refine_prompt=False,
    refine_relation=False,
    ffn_mul=4,
    dropout=0.1,
    loss_func="binary_cross_entropy_loss",
    alpha=0.3,
    gamma=3,
    label_embed_strategy="both",
    coref_classifier=False,
    coref_loss_weight=10.0,
    coreference_label="SELF",
    num_train_rel_types=20,
    random_drop=True,
    max_len=384,
    max_width=12,
    max_entity_pair_distance=None,
    fixed_relation_types=True,
    positive_weight=2.0,
    negative_weight=1.0,
    max_types=25,
    shuffle_types=True,
    max_neg_type_ratio=1,
    add_entity_markers=False,
)


def _backbone_of(base: Path) -> Path:
    """The encoder folder a GLiREL at `base` rebuilds itself from (or `base`, an encoder itself)."""
    if (base / "glirel_config.json").is_file():
        name = json.loads((base / "glirel_config.json").read_text(encoding="utf-8"))["model_name"]
        return glirel_backbone(str(name), base, models_dir())
    return base


def load_base(base: Path, device: str = "cpu", *, overrides: Mapping[str, object] | None = None) -> Any:
    """A GLiREL to train: a GLiREL folder with its weights, or a new GLiREL on a transformers encoder
    folder (relation layers random, the encoder's weights pretrained). `overrides` replace fields of
    its glirel_config (e.g. hidden_size, loss_func, num_train_rel_types)."""
    torch = require("torch", "gliner", "GLiREL fine-tuning")
    glirel = require("glirel", "gliner", "GLiREL fine-tuning")
    base = Path(base)
    is_glirel = (base / "glirel_config.json").is_file()
    with loading("glirel", base, device):
        backbone = _backbone_of(base)
        if is_glirel:
            config = argparse.Namespace(**json.loads((base / "glirel_config.json").read_text(encoding="utf-8")))
        else:
            hidden = json.loads((base / "config.json").read_text(encoding="utf-8")).get("hidden_size", 768)
            config = argparse.Namespace(**_CONFIG, hidden_size=hidden)  # a smaller one projects it down
        vars(config).update(overrides or {})
        config.model_name = str(backbone.resolve())
        config.device = device
        logging.getLogger("transformers").setLevel(logging.ERROR)  # "new embeddings initialised" noise
        model = glirel.GLiREL(config)
        if is_glirel:
            state = torch.load(base / "pytorch_model.bin", map_location="cpu", weights_only=True)
            model.load_state_dict(state, strict=False)
        return model.to(device)


def pairable(ex: Example, max_words: int) -> Example | None:
    """The example cut to max_words, with its entities and relations inside; None below two entities
    (GLiREL classifies entity pairs)."""
    ex = ex.cut(max_words)
    return ex if len({(e.first, e.last) for e in ex.entities}) >= 2 else None


def _dedupe(ex: Example) -> Example:
    """One entity per span (GLiREL keys relations by span)."""
    first: dict[tuple[int, int], int] = {}
    for i, e in enumerate(ex.entities):
        first.setdefault((e.first, e.last), i)
    keep = sorted(first.values())
    new = {old: k for k, old in enumerate(keep)}
    remap = {i: new[first[(e.first, e.last)]] for i, e in enumerate(ex.entities)}
    rels = {Relation(remap[r.head], remap[r.tail], r.label) for r in ex.relations if remap[r.head] != remap[r.tail]}
    return replace(ex, entities=tuple(ex.entities[i] for i in keep), relations=tuple(sorted(rels, key=repr)))


def predict(
    model: Any, examples: Sequence[Example], labels: Sequence[str], threshold: float, batch_size: int = 8
) -> list[Example]:
    """The examples with GLiREL's relations between their gold entities (the best label per pair, as
    the extractor keeps); examples with fewer than two entities get none."""
    out = []
    was_training = model.training
    model.train(False)
    try:
        for k in range(0, len(examples), batch_size):
            exs = [_dedupe(ex) for ex in examples[k : k + batch_size]]
            spans = [[(e.first, e.last, e.label) for e in ex.entities] for ex in exs]
            found = glirel_relations(model, [list(ex.tokens) for ex in exs], spans, labels, threshold)
            for ex, rels in zip(exs, found):
                where = {(e.first, e.last): n for n, e in enumerate(ex.entities)}
                best: dict[tuple[int, int], Relation] = {}
                for h, t, label, score in sorted(rels, key=lambda r: (-r[3], r[2])):
                    best.setdefault((where[h], where[t]), Relation(where[h], where[t], label, score))
                out.append(replace(ex, relations=tuple(best.values())))
    finally:
        model.train(was_training)
    return out


def directed_labels(train: Sequence[Example], base: Path) -> list[str]:
    """The labels whose triples in `train` seldom also stand the other way round (child, not spouse), and the base's
    own for labels `train` lacks: where GLiREL scores a pair alike both ways, it does not know their direction."""
    have = [{(r.head, r.tail, r.label) for r in ex.relations} for ex in train]
    total = Counter(label for triples in have for _, _, label in triples)
    both = Counter(label for triples in have for h, t, label in triples if (t, h, label) in triples)
    try:  # none (an encoder folder) or unreadable: loading the base next says so, with the fix
        old = json.loads((base / "glirel_config.json").read_text(encoding="utf-8")).get("directed_labels") or []
    except (OSError, ValueError, AttributeError):
        old = []
    return sorted({x for x in old if x not in total} | {x for x, n in total.items() if both[x] < n / 2})


def typed_markers(ex: Example) -> Example:
    """The example as a model trained with typed markers reads it (glirel_input.mark_types)."""
    ex = _dedupe(ex)
    words, where = mark_types(ex.tokens, [(e.first, e.last, e.label) for e in ex.entities])
    entities = tuple(Span(*where[(e.first, e.last)], e.label) for e in ex.entities)
    return Example(tuple(words), entities, ex.relations, where=ex.where)


def _jsonable(v: object) -> bool:
    try:
        json.dumps(v)
        return True
    except (TypeError, ValueError):
        return False


evaluate_glirel = Evaluator("relation", load_base, predict)


class GlirelTrainable(Trainable):
    """A GLiREL model as the training loop sees it."""

    kind, evaluator, encoder_at = "GLiREL", evaluate_glirel, "token_rep_layer.bert_layer.model"

    def loss(self, batch: Sequence[Example]) -> torch.Tensor:
        typed = getattr(self.model.config, "typed_markers", False)
        data = [to_glirel(typed_markers(ex) if typed else _dedupe(ex)) | {"label": self.labels_for(ex)} for ex in batch]
        x = self.model.collate_fn(data, train_relation_types=list(self.labels), device=self.settings.device)
        return self.model(x)["total_loss"]

    def labels_for(self, ex: Example) -> list[str]:
        """As GLiREL's collator: its own labels and others up to num_train_rel_types, a random number of
        them kept (random_drop); GLiREL then sorts them."""
        wanted = int(self.model.config.num_train_rel_types)
        own = [r.label for r in ex.relations]
        labels = sample_labels(self.rng, own, self.labels, wanted - len(set(own)), wanted)
        if labels and getattr(self.model.config, "random_drop", False):
            labels = labels[: self.rng.randint(1, len(labels))]
        return labels

    def save(self, folder: Path, base: Path) -> None:
        """Weights, config, and a copy of the backbone folder (GLiREL rebuilds its encoder from it)."""
        src = _backbone_of(base)
        (folder / "backbone").mkdir()
        for f in src.iterdir():
            if f.is_file() and not f.name.startswith("."):
                shutil.copy2(f, folder / "backbone" / f.name)
        config = dict(vars(self.model.config))
        config["model_name"] = "backbone"  # relative: the loader finds backbone/ beside the weights
        config.pop("device", None)
        self.model.save_pretrained(folder, config={k: v for k, v in config.items() if _jsonable(v)})


def finetune_glirel(
    base: Path,
    train: Sequence[Example],
    dev: Sequence[Example] | None,
    out: Path,
    settings: TrainSettings,
    *,
    overrides: Mapping[str, object] | None = None,
    extra_info: dict[str, object] | None = None,
) -> TrainResult:
    """Train GLiREL from `base` (its config changed by `overrides`) on `train` (examples with two
    entities or more), keep the checkpoint with the best relation F1 on `dev`, save to `out`."""
    train = [p for ex in train if (p := pairable(ex, settings.max_words)) is not None]
    dev = [p for ex in dev or [] if (p := pairable(ex, settings.max_words)) is not None] or None
    overrides = {"directed_labels": directed_labels(train, base), **(overrides or {})}
    load = partial(load_base, base, settings.device, overrides=overrides)
    return train_and_save(GlirelTrainable, load, base, train, dev, out, settings, extra_info)
