"""What GLiNER and GLiREL training share: settings, seeding, layer freezing, the loop (output.py: the folder).

The loop is plain PyTorch over the library's own model, collator and loss (one tqdm bar showing the loss). The eval
set's F1, measured every `eval_every` steps and at the end, chooses the checkpoint; output.py writes the model beside
`out` and renames it into place, so an interrupted or failed run leaves no half-written model folder."""

from __future__ import annotations

import copy
import logging
import operator
import random
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tiny_graphrag.backends.files import load_error
from tiny_graphrag.config import Checked, allowed
from tiny_graphrag.errors import ConfigError, ModelLoadError
from tiny_graphrag.finetune.data import Example
from tiny_graphrag.finetune.labels import trained_labels, write_trained_labels
from tiny_graphrag.finetune.output import written_aside

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from tiny_graphrag.finetune.score import Evaluator

log = logging.getLogger(__name__)
NAMES = {"gliner": "GLiNER", "glirel": "GLiREL"}
# What a --base or --model folder holds, and what to pass instead
BASE_FIX = (
    "It should hold a {name} model ({kind}_config.json and its weights) or a transformers encoder to build one on "
    "(config.json naming its model_type, weights and tokenizer). To fix: pass such a folder, a name from "
    "`tiny-graphrag models list`, or 'starter' (built by `make starter`)"
)


@dataclass
class TrainSettings(Checked):
    epochs: float = allowed(3.0, "(0, 10000]")  # passes over the training set (a fraction stops early)
    batch_size: int = allowed(8, ">= 1")
    # encoder lr; None: 1e-4 (5e-5 left a new type's scores below 0.5, 2e-4 overshot), or Trainable.wide's
    lr: float | None = allowed(None, "(0, 1] or None")
    head_lr: float | None = allowed(None, "(0, 1] or None")  # of the layers on top (default 30 x lr)
    # a few hundred labelled examples still get this many steps (more passes)
    min_steps: int = allowed(200, ">= 0")
    max_steps: int | None = allowed(None, ">= 1 or None")  # stop after this many steps whatever the rest say
    # encoder layers kept fixed from the bottom (None: all but the top 2)
    freeze_layers: int | None = allowed(None, ">= 0 or None")
    max_words: int = allowed(96, ">= 1")  # longer examples are cut (words)
    eval_every: int | None = allowed(None, ">= 1 or None")  # steps between checkpoint evaluations (default: per epoch)
    warmup: float = allowed(0.1, "[0, 1]")
    seed: int = allowed(0, "[0, 4294967295]")  # numpy's seeds
    device: str = "cpu"
    threshold: float = allowed(0.5, "[0, 1]")
    # GLiNER's focal loss (its trainer's focal_loss_alpha/gamma; alpha < 0: plain BCE): with ~1 positive
    # span in hundreds, it keeps the few positives from being drowned, which a short run needs
    focal_alpha: float = 0.75
    focal_gamma: float = allowed(2.0, ">= 0")
    all_labels: bool = True  # GLiNER asks each example all the data's types (from 50 examples); False: samples them
    type_head: bool = True  # GLiNER: fit a type head beside it (finetune/type_head.py); the starter's recipe does not
    progress: bool = True

    @property
    def encoder_lr(self) -> float:
        return 1e-4 if self.lr is None else self.lr

    def as_dict(self) -> dict[str, object]:
        d = asdict(self) | {"lr": self.encoder_lr}
        d.pop("progress")
        return d


THRESHOLDS = (0.5, 0.4, 0.3, 0.2, 0.1)


@dataclass
class TrainResult:
    steps: int
    seconds: float
    best_f1: float | None
    best_step: int
    final_loss: float
    history: list[dict[str, float]]
    threshold: float | None = None  # chosen on the eval set among THRESHOLDS


class Trainable(ABC):
    """GLiNER or GLiREL as the loop sees it: lower encoder layers frozen, encoder and new layers at their own rates."""

    kind: ClassVar[str]  # "GLiNER" or "GLiREL"
    evaluator: ClassVar[Evaluator]  # its predictions and their score
    encoder_at: ClassVar[str]  # where the pretrained encoder sits in the model
    wide: ClassVar[tuple[float, int] | None] = None  # lr and frozen layers when each example is asked every type

    def __init__(self, model: Any, settings: TrainSettings, labels: Sequence[str]) -> None:
        self.model, self.settings, self.labels = model, settings, list(labels)
        self.scored = self.labels  # the labels eval F1 is measured over (train_and_save: the data's own)
        self.encoder: torch.nn.Module = operator.attrgetter(self.encoder_at)(model)
        freeze_lower_layers(self.encoder, settings.freeze_layers)
        self.frozen = [m for m in self.encoder.modules() if {p.requires_grad for p in m.parameters()} == {False}]
        self.rng = random.Random(settings.seed)  # draws the labels each example is trained against

    @abstractmethod
    def loss(self, batch: Sequence[Example]) -> torch.Tensor: ...

    def f1_by_threshold(self, examples: Sequence[Example]) -> dict[float, float]:
        """Eval F1 at each of THRESHOLDS from one pass at the lowest (the models decode greedily by score)."""
        predicted = self.evaluator.predict(self.model, examples, self.scored, min(THRESHOLDS), self.settings.batch_size)
        return {t: self.evaluator.score(self.evaluator.above(predicted, t), examples).f1 for t in THRESHOLDS}

    def save(self, folder: Path, base: Path) -> None:
        self.model.save_pretrained(folder)

    def parameters_for(self, lr: float, head_lr: float) -> list[dict[str, object]]:
        enc = {id(p) for p in self.encoder.parameters()}
        params = [p for p in self.model.parameters() if p.requires_grad]
        return [
            {"params": [p for p in params if id(p) in enc], "lr": lr},
            {"params": [p for p in params if id(p) not in enc], "lr": head_lr},
        ]

    def train(self, mode: bool = True) -> object:
        out = self.model.train(mode)
        # frozen layers stay in eval mode: their dropout took 14% of a step and only added noise (RESULTS.md, "Recipe v6")
        for module in self.frozen if mode else ():  # found once, not per step
            module.eval()
        return out

    def state(self) -> dict[str, torch.Tensor]:
        return self.model.state_dict()

    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.model.load_state_dict(state)


def train_and_save(
    trainable: type[Trainable],
    load: Callable[[], Any],
    base: Path,
    train: Sequence[Example],
    dev: Sequence[Example] | None,
    out: Path,
    settings: TrainSettings,
    extra_info: dict[str, object] | None = None,
    *,
    after: Callable[[Any, Path, Sequence[Example]], dict[str, Any]] | None = None,
) -> TrainResult:
    """Train the model `load` makes from `base` on `train` (seeded), keep the checkpoint with the best F1 on `dev`, write
    it to `out` with the labels it knows and how it was trained; `after(model, out, train)` adds files and records."""
    with written_aside(out) as folder:
        with seeded(settings.seed):  # a new model's layers start random: the same start in every process
            model = load()
        labels = sorted(set(trainable.evaluator.labels(train)) | set(trained_labels(base) or []))
        # asked every type from 50 examples (with fewer, a dev set lost F1 by it; RESULTS.md): recorded as it ran
        settings = replace(settings, all_labels=settings.all_labels and len(train) >= 50)
        if settings.all_labels and trainable.wide and settings.lr is None and settings.freeze_layers is None:
            settings = replace(settings, lr=trainable.wide[0], freeze_layers=trainable.wide[1])
        tr = trainable(model, settings, labels)
        # scored over the data's labels, as `models evaluate` does: a base's other labels (unlabelled in a new domain's
        # data) made every find of theirs count as wrong and chose an early checkpoint (RESULTS.md, "Several new types")
        in_data = {*trainable.evaluator.labels(train), *trainable.evaluator.labels(dev or ())}
        tr.scored = [x for x in labels if x in in_data] or labels  # data without labels: all the model knows
        with seeded(settings.seed):
            result = train_loop(tr, train, dev, settings, desc=f"fine-tuning {tr.kind}")
        tr.save(folder, base)
        more = after(tr.model, folder, train) if after else {}
        result = replace(result, threshold=more.pop("threshold", result.threshold))
        write_trained_labels(
            folder,
            tr.kind.lower(),
            labels,
            files=sorted(p.name for p in folder.iterdir()),  # what a later --out here may replace (check_out)
            base=str(base),
            settings=settings.as_dict(),
            examples=len(train),
            best_eval_f1=result.best_f1,
            threshold=result.threshold,
            best_step=result.best_step,
            steps=result.steps,
            seconds=round(result.seconds, 1),
            **(more | (extra_info or {})),
        )
    return result


def sample_labels(rng: random.Random, own: Sequence[str], pool: Sequence[str], negatives: int, cap: int) -> list[str]:
    """The labels one example is trained against: its own and up to `negatives` others from `pool`, shuffled, at most
    `cap`. GLiNER's and GLiREL's collators sample them through a `set`, whose order changes with each process's string
    hashing (one seed trained differently from run to run); we pass them in, drawn from a seeded generator."""
    own = sorted(set(own))
    others = [x for x in pool if x not in own]
    labels = own + rng.sample(others, max(0, min(len(others), negatives)))
    rng.shuffle(labels)
    return labels[:cap]


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Every generator training draws from seeded with `seed`, and given back as it was afterwards. Python's and
    numpy's too (GLiNER's and GLiREL's collators sample negative labels with `random`); torch's because a new model's
    layers start from it, and this torch starts each process with a random seed."""
    import numpy as np
    import torch

    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=range(torch.cuda.device_count())):
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


def freeze_lower_layers(encoder: torch.nn.Module, freeze: int | None) -> int:
    """Freeze the lowest `freeze` layers and the embeddings (default: all but the top 2); returns the layers frozen."""
    layer_of = {n: int(m.group(1)) for n, _ in encoder.named_parameters() if (m := re.search(r"layer\.(\d+)\.", n))}
    n_layers = len(set(layer_of.values()))
    freeze = min(max(0, n_layers - 2) if freeze is None else freeze, n_layers)
    for name, p in encoder.named_parameters():
        # the embeddings sit below layer 0: fixed whenever any layer is
        if (freeze > 0 and "embeddings" in name) or layer_of.get(name, freeze) < freeze:
            p.requires_grad_(False)
    return freeze


@contextmanager
def oom_hint(batch_size: int) -> Iterator[None]:
    """Out of memory (the GPU's, or the machine's: MemoryError or torch's allocator) -> a ConfigError naming the fix."""
    try:
        yield
    except (MemoryError, RuntimeError) as exc:  # torch.cuda.OutOfMemoryError is a RuntimeError
        if not isinstance(exc, MemoryError) and not re.search(r"out of memory|can't allocate", str(exc)):
            raise
        gpu = re.search(r"\b(cuda|mps)\b", str(exc), re.IGNORECASE)
        raise ConfigError(
            f"{'the GPU' if gpu else 'training'} ran out of memory with --batch-size {batch_size}: pass a smaller "
            f"--batch-size (e.g. {max(1, batch_size // 2)}), {'or --device cpu' if gpu else 'or free memory'}"
        ) from exc


def check_base(kind: str, base: Path) -> None:
    """Refuse a folder that is neither a `kind` model nor an encoder, naming the other kind's model as such."""
    other, own = ("glirel" if kind == "gliner" else "gliner"), (base / f"{kind}_config.json").is_file()
    if not own and (base / f"{other}_config.json").is_file():
        raise ModelLoadError(
            f"{base} is a {NAMES[other]} model, not a {NAMES[kind]} one. To fix: use `tiny-graphrag models "
            f"finetune|evaluate {other}` for it, or pass a {NAMES[kind]} model folder"
        )
    if not own and not (base / "config.json").is_file():
        fix = BASE_FIX.format(name=NAMES[kind], kind=kind)
        raise ModelLoadError(f"{base} is not a {NAMES[kind]} model: it has no {kind}_config.json. {fix}")


@contextmanager
def loading(kind: str, base: Path, device: str) -> Iterator[None]:
    """Around loading a `kind` model (or a new one on an encoder) from `base`: a failure gets its cause and the fix."""
    check_base(kind, base)
    try:
        yield
    except ModelLoadError:
        raise
    except Exception as exc:
        raise load_error(
            NAMES[kind], base, exc, device=device, fix=BASE_FIX.format(name=NAMES[kind], kind=kind) + "."
        ) from exc


def batches(examples: Sequence[Example], batch_size: int, rng: random.Random) -> Iterator[list[Example]]:
    """Endless shuffled batches, one pass after another."""
    order = list(range(len(examples)))
    while True:
        rng.shuffle(order)
        for i in range(0, len(order), batch_size):
            chunk = [examples[j] for j in order[i : i + batch_size]]
            if chunk:
                yield chunk


def best_threshold(model: Trainable, dev: Sequence[Example]) -> tuple[float, float]:
    """The eval F1 at the best of THRESHOLDS, and that threshold (a tie: the higher one). A short run's scores can sit
    below 0.5 (focal loss keeps them low); the threshold is recorded with the model for the extractor to use."""
    by_threshold = model.f1_by_threshold(dev)
    at = max(by_threshold, key=lambda t: (by_threshold[t], t))
    return by_threshold[at], at


def train_loop(
    model: Trainable, train: Sequence[Example], dev: Sequence[Example] | None, settings: TrainSettings, *, desc: str
) -> TrainResult:
    """Train `model` in place; at the end it holds the checkpoint with the best eval F1 (or the last)."""
    import torch
    from tqdm import tqdm
    from transformers import get_linear_schedule_with_warmup

    if not train:
        raise ConfigError("no training examples; pass a --data file with labelled examples")
    rng = random.Random(settings.seed)
    per_epoch = max(1, -(-len(train) // settings.batch_size))
    total = max(1, round(settings.epochs * per_epoch), settings.min_steps)
    if settings.max_steps is not None:
        total = min(total, settings.max_steps)
    every = settings.eval_every or per_epoch
    lr = settings.encoder_lr
    head_lr = settings.head_lr if settings.head_lr is not None else 30 * lr
    optimizer = torch.optim.AdamW(model.parameters_for(lr, head_lr), weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, int(settings.warmup * total), total)
    best_f1, best_step, best_state, threshold = None, 0, None, None
    history: list[dict[str, float]] = []
    start = time.perf_counter()
    loss_value = float("nan")
    smooth = None
    stream = batches(train, settings.batch_size, rng)
    bar = tqdm(range(1, total + 1), desc=desc, disable=not settings.progress, unit="step")
    with oom_hint(settings.batch_size):
        for step in bar:
            model.train(True)
            loss = model.loss(next(stream))
            optimizer.zero_grad()
            if loss.requires_grad:  # a batch with nothing to learn from gives a constant 0
                loss.backward()
                torch.nn.utils.clip_grad_norm_([p for g in optimizer.param_groups for p in g["params"]], 10.0)
                optimizer.step()
            schedule.step()
            loss_value = float(loss.detach())
            smooth = loss_value if smooth is None else 0.9 * smooth + 0.1 * loss_value
            bar.set_postfix({"loss": f"{smooth:.3f}"} | ({"eval_f1": f"{best_f1:.3f}"} if best_f1 is not None else {}))
            if dev and (step % every == 0 or step == total):
                model.train(False)
                f1, at = best_threshold(model, dev)
                history.append({"step": step, "loss": smooth, "eval_f1": f1, "threshold": at})
                log.info("%s step %d: loss %.3f, eval F1 %.3f at threshold %.1f", desc, step, smooth, f1, at)
                # a tie goes to the later checkpoint (more training)
                if best_f1 is None or f1 >= best_f1:
                    best_f1, best_step, threshold = f1, step, at
                    best_state = copy.deepcopy(model.state())
    bar.close()
    if best_state is not None and best_step != total:
        model.load_state(best_state)
    model.train(False)
    return TrainResult(
        threshold=threshold,
        steps=total,
        seconds=time.perf_counter() - start,
        best_f1=best_f1,
        best_step=best_step or total,
        final_loss=loss_value,
        history=history,
    )
