"""Fine-tune and evaluate GLiNER (entities) with the library's own model, collator and loss."""

from __future__ import annotations

import bisect
import json
import logging
import random
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiny_graphrag.errors import ModelLoadError, require
from tiny_graphrag.finetune.data import Example, Span, labels_of
from tiny_graphrag.finetune.labels import trained_labels
from tiny_graphrag.finetune.loop import (
    Trainable,
    TrainResult,
    TrainSettings,
    sample_labels,
    train_and_save,
    written_aside,
)
from tiny_graphrag.finetune.score import Evaluator, score_entities

if TYPE_CHECKING:  # pragma: no cover
    import torch

log = logging.getLogger(__name__)


def load_base(
    base: Path, device: str = "cpu", *, rnn_layers: int = 1, max_width: int = 12, hidden_size: int | None = None
) -> Any:
    """A GLiNER to train: a GLiNER folder as it is, or a new GLiNER on a transformers encoder folder
    (its span and label layers start random, the encoder keeps its pretrained weights)."""
    gliner = require("gliner", "gliner", "GLiNER fine-tuning")
    base = Path(base)
    try:
        if (base / "gliner_config.json").is_file():
            return gliner.GLiNER.from_pretrained(str(base), local_files_only=True, map_location=device)
        if (base / "config.json").is_file():
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
            return model
    except Exception as exc:
        raise ModelLoadError(f"could not load {base} as a GLiNER model or an encoder to train: {exc}") from exc
    raise ModelLoadError(
        f"{base} is neither a GLiNER model folder (gliner_config.json) nor a transformers encoder folder "
        "(config.json); pass one of them as --base"
    )


def _cut(ex: Example, max_words: int) -> Example:
    """The first max_words words and the entities inside them (GLiNER reads at most max_len words)."""
    if len(ex.tokens) <= max_words:
        return ex
    keep = [e for e in ex.entities if e.last < max_words]
    return replace(ex, tokens=ex.tokens[:max_words], entities=tuple(keep), relations=(), text=None, offsets=None)


def char_to_words(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """Inclusive word indices of a character span, or None when it covers no word."""
    starts, ends = [s for s, _ in offsets], [e for _, e in offsets]
    first = bisect.bisect_right(ends, start)
    last = bisect.bisect_left(starts, end) - 1
    return (first, last) if first <= last else None


class GlinerTrainable(Trainable):
    """A GLiNER model as the training loop sees it."""

    def __init__(self, model: Any, settings: TrainSettings, labels: Sequence[str]):
        super().__init__(model, model.model.token_rep_layer.bert_layer.model, settings, labels)
        self.collate = model._create_data_collator()
        self.rng = random.Random(settings.seed)

    def loss(self, batch: Sequence[Example]) -> torch.Tensor:
        data = [to_train(_cut(ex, self.settings.max_words)) for ex in batch]
        for d in data:  # as GLiNER's collator: own types, len(ner) x U(0, max_neg_type_ratio) others
            ratio = self.rng.randint(0, int(self.model.config.max_neg_type_ratio or 0))
            own = [e[-1] for e in d["ner"]]
            d["ner_labels"] = sample_labels(
                self.rng, own, self.labels, len(own) * ratio, int(self.model.config.max_types)
            )
        inputs = self.collate(data)
        inputs = {k: (v.to(self.settings.device) if hasattr(v, "to") else v) for k, v in inputs.items()}
        return self.model(**inputs, alpha=self.settings.focal_alpha, gamma=self.settings.focal_gamma).loss

    def f1(self, examples: Sequence[Example], threshold: float | None = None) -> float:
        at = self.settings.threshold if threshold is None else threshold
        preds = predict(self.model, examples, self.labels, at, self.settings.batch_size)
        return score_entities(preds, examples).f1


def to_train(ex: Example) -> dict[str, Any]:
    return {"tokenized_text": list(ex.tokens), "ner": [[e.first, e.last, e.label] for e in ex.entities]}


def predict(
    model: Any, examples: Sequence[Example], labels: Sequence[str], threshold: float, batch_size: int = 8
) -> list[Example]:
    """The examples with GLiNER's entities instead of the gold ones (no relations)."""
    texts, offsets = zip(*(ex.joined() for ex in examples)) if examples else ((), ())
    was_training = model.training
    model.train(False)
    try:
        raw = model.inference(list(texts), list(labels), flat_ner=True, threshold=threshold, batch_size=batch_size)
    finally:
        model.train(was_training)
    out = []
    for ex, offs, ents in zip(examples, offsets, raw):
        spans = []
        for e in ents:
            words = char_to_words(offs, int(e["start"]), int(e["end"]))
            if words is not None:
                spans.append(Span(words[0], words[1], str(e["label"])))
        out.append(replace(ex, entities=tuple(spans), relations=()))
    return out


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
) -> TrainResult:
    """Train GLiNER from `base` on `train`, keep the checkpoint with the best F1 on `dev`, save to `out`."""
    with written_aside(out) as tmp:
        model = load_base(base, settings.device, rnn_layers=rnn_layers, max_width=max_width, hidden_size=hidden_size)
        model = model.to(settings.device)
        labels, _ = labels_of(train)
        trainable = GlinerTrainable(model, settings, sorted(set(labels) | set(trained_labels(base) or [])))
        return train_and_save(
            trainable, train, dev, tmp, model.save_pretrained, kind="GLiNER", base=base, extra_info=extra_info
        )


evaluate_gliner = Evaluator("entity", load_base, predict)
