"""Fine-tune GLiNER and GLiREL to a schema, offline, and measure them (`tiny-graphrag models finetune|evaluate`).

Modules: data (formats), score (P/R/F1 with intervals), loop (shared training loop), gliner and glirel (each model's
training and evaluation), labels (trained-label record, zero-shot warning), redocred and starter (the starter pair's
data and recipe), api and cli (entry points)."""

from tiny_graphrag.finetune.api import evaluate, finetune

__all__ = ["evaluate", "finetune"]
