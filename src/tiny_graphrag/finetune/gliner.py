"""Fine-tune and evaluate GLiNER (entities) with the library's own model, collator and loss."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiny_graphrag.backends.embed import Embedder
from tiny_graphrag.errors import require
from tiny_graphrag.finetune.data import Example, Span, char_to_words, to_gliner
from tiny_graphrag.finetune.loop import Trainable, TrainResult, TrainSettings, loading, sample_labels, train_and_save
from tiny_graphrag.finetune.score import Evaluator
from tiny_graphrag.finetune.type_head import NONE, THRESHOLD, TypeHead, gliner_entities

if TYPE_CHECKING:  # pragma: no cover
    import torch


def load_base(
    base: Path, device: str = "cpu", *, rnn_layers: int = 1, max_width: int = 12, hidden_size: int | None = None
) -> Any:
    """A GLiNER to train: a GLiNER folder as it is, or a new one on an encoder folder (its new layers start random)."""
    gliner = require("gliner", "gliner", "GLiNER fine-tuning")
    base = Path(base)
    with loading("gliner", base, device):
        if (base / "gliner_config.json").is_file():
            return gliner.GLiNER.from_pretrained(str(base), local_files_only=True, map_location=device).to(device)
        hidden = json.loads((base / "config.json").read_text(encoding="utf-8")).get("hidden_size", 768)
        config = gliner.GLiNERConfig(
            model_name=str(base.resolve()),
            hidden_size=hidden_size or hidden,  # smaller: GLiNER projects the encoder's output down
            max_width=max_width,
            dropout=0.1,
            max_len=384,
            num_rnn_layers=rnn_layers,
        )
        model = gliner.GLiNER._get_gliner_class(config).load_from_config(
            config, backbone_from_pretrained=True, local_files_only=True, map_location=device
        )
        return model.to(device)


@dataclass(frozen=True)
class WithHead:
    """A GLiNER and the type head fitted beside it (type_head.py), as `models evaluate` and the extractor use them."""

    model: Any
    head: TypeHead


def load_scored(folder: Path, device: str = "cpu", models_dir: str | os.PathLike[str] | None = None) -> Any:
    """A GLiNER folder's model, with its type head when it has one (on the embedder found under `models_dir`)."""
    model, head = load_base(folder, device), TypeHead.load(folder, models_dir)
    return WithHead(model, head) if head else model


def predict(
    model: Any, examples: Sequence[Example], labels: Sequence[str], threshold: float, batch_size: int = 8
) -> list[Example]:
    """The examples with GLiNER's entities (rescored by its type head if it has one) instead of the gold ones."""
    head, model = (model.head, model.model) if isinstance(model, WithHead) else (None, model)
    texts, offsets = zip(*(ex.joined() for ex in examples)) if examples else ((), ())
    was_training = model.training
    model.train(False)
    try:
        found = gliner_entities(model, head, texts, labels, threshold, batch_size)
    finally:
        model.train(was_training)
    out = []
    for ex, offs, ents in zip(examples, offsets, found):
        words = [(char_to_words(offs, start, end), label, score) for start, end, label, score in ents]
        out.append(replace(ex, entities=tuple(Span(*w, lab, sc) for w, lab, sc in words if w), relations=()))
    return out


def fit_type_head(embedder: Embedder, model: Any, folder: Path, train: Sequence[Example]) -> dict[str, Any]:
    """Fit the type head on the training spans' words and on GLiNER's other finds in the same sentences (as "none"),
    save it in `folder`; what to record of it (its threshold replaces GLiNER's)."""
    types = sorted({e.label for ex in train for e in ex.entities})
    joined = [ex.joined() for ex in train]
    raw = model.inference([t for t, _ in joined], types, flat_ner=False, multi_label=True, threshold=THRESHOLD)
    spans, labels = [], []
    for ex, (text, offs), ents in zip(train, joined, raw):
        gold = {(e.first, e.last): e.label for e in ex.entities}
        words = (char_to_words(offs, int(e["start"]), int(e["end"])) for e in ents)
        others = {w: NONE for w in words if w is not None and w not in gold}
        for (first, last), label in (gold | others).items():
            spans.append(text[offs[first][0] : offs[last][1]])
            labels.append(label)
    if (head := TypeHead.fit(spans, labels, embedder)) is None:  # one type, and GLiNER found nothing else
        return {}
    head.save(folder)
    return {"threshold": THRESHOLD, "type_head": {"spans": len(spans), "types": len(head.classes) - (NONE in labels)}}


evaluate_gliner = Evaluator("entity", load_scored, predict)


class GlinerTrainable(Trainable):
    """A GLiNER model as the training loop sees it."""

    kind, evaluator, encoder_at = "GLiNER", evaluate_gliner, "model.token_rep_layer.bert_layer.model"
    wide = (5e-5, 2)  # all but the lowest 2 (the starter's top 4 of 6): RESULTS.md, "More of the encoder"

    def __init__(self, model: Any, settings: TrainSettings, labels: Sequence[str]):
        super().__init__(model, settings, labels)
        self.collate = model._create_data_collator()

    def loss(self, batch: Sequence[Example]) -> torch.Tensor:
        data = [to_gliner(ex.cut(self.settings.max_words)) for ex in batch]
        every, cap = self.settings.all_labels, int(self.model.config.max_types)
        for d in data:  # own types and others: all the data's (every), or as GLiNER's collator samples them
            own, neg = [e[-1] for e in d["ner"]], int(self.model.config.max_neg_type_ratio or 0)
            many = len(self.scored) if every else len(own) * self.rng.randint(0, neg)  # len(ner) x U(0, ratio)
            d["ner_labels"] = sample_labels(self.rng, own, self.scored if every else self.labels, many, cap)
        inputs = self.collate(data)
        inputs = {k: (v.to(self.settings.device) if hasattr(v, "to") else v) for k, v in inputs.items()}
        return self.model(**inputs, alpha=self.settings.focal_alpha, gamma=self.settings.focal_gamma).loss


def finetune_gliner(
    base: Path,
    train: Sequence[Example],
    dev: Sequence[Example] | None,
    out: Path,
    settings: TrainSettings,
    *,
    rnn_layers: int = 1,
    max_width: int = 12,
    hidden_size: int | None = None,
    extra_info: dict[str, object] | None = None,
    models_dir: str | os.PathLike[str] | None = None,
) -> TrainResult:
    """Train GLiNER from `base` on `train`, keep the best checkpoint on `dev`, save it and its type head to `out`."""
    load = partial(
        load_base, base, settings.device, rnn_layers=rnn_layers, max_width=max_width, hidden_size=hidden_size
    )
    # the embedder is found before training, so a missing one fails in seconds, not after it
    after = partial(fit_type_head, Embedder(models_dir=models_dir)) if settings.type_head else None
    return train_and_save(GlinerTrainable, load, base, train, dev, out, settings, extra_info, after=after)
