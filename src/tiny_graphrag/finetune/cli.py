"""`tiny-graphrag models finetune|evaluate`: arguments and what they run (kept here, not in cli/)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tiny_graphrag.config import option_type
from tiny_graphrag.finetune.api import evaluate, finetune
from tiny_graphrag.finetune.data import FORMATS_HELP
from tiny_graphrag.finetune.loop import TrainSettings


def add_parsers(msub: argparse._SubParsersAction, kw: dict[str, Any]) -> None:
    """Add `finetune` and `evaluate` to the `models` subcommands."""
    f = msub.add_parser("finetune", help="fine-tune GLiNER or GLiREL on labelled examples", **kw)
    e = msub.add_parser("evaluate", help="precision/recall/F1 of a GLiNER or GLiREL model on labelled examples", **kw)
    for p in (f, e):
        p.add_argument("kind", choices=["gliner", "glirel"], help="which model")
    f.add_argument(
        "--base",
        required=True,
        help="model to start from: a GLiNER/GLiREL folder, a transformers encoder folder (new model on it), a "
        "name under models/, 'all-MiniLM-L6-v2', or 'starter' (the starter pair of `make starter`)",
    )
    f.add_argument("--data", required=True, type=Path, help="training examples: " + FORMATS_HELP)
    f.add_argument("--eval", type=Path, help="evaluation examples, same formats: their F1 chooses the checkpoint")
    f.add_argument(
        "--out", required=True, type=Path, help="the new model folder (an existing model folder is replaced)"
    )
    defaults = TrainSettings()
    for flag, help in (
        ("--epochs", "passes over the training data (more when --min-steps needs them)"),
        ("--batch-size", "examples per step (lower it if memory runs out)"),
        ("--lr", "encoder learning rate, 30x on top (default 1e-4; GLiNER from 50 examples: 5e-5, 2 frozen)"),
        ("--min-steps", "train at least this many steps, however few the examples"),
        ("--max-steps", "stop after this many steps"),
        ("--freeze-layers", "encoder layers kept fixed from the bottom (default: all but 2, or see --lr)"),
        ("--seed", "seed: the same seed and data give the same model"),
    ):  # each TrainSettings' field: its default, and its range checked as the option is read
        name = flag[2:].replace("-", "_")
        f.add_argument(flag, type=option_type(TrainSettings, name), default=getattr(defaults, name), help=help)
    f.add_argument("--no-type-head", dest="type_head", action="store_false", help="GLiNER: fit no type head beside it")
    e.add_argument("--model", required=True, help="model folder or name under models/ ('starter': the starter pair)")
    e.add_argument("--data", required=True, type=Path, help="test examples: " + FORMATS_HELP)
    e.add_argument(
        "--threshold",
        type=option_type(TrainSettings, "threshold"),
        help="minimum score of a prediction (default: the one chosen at training, else 0.5)",
    )
    e.add_argument(
        "--zero-shot", action="store_true", help="also score labels the model was never trained on (else refused)"
    )
    for p, printed in ((f, "the training summary"), (e, "the scores")):
        p.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:N or mps")
        p.add_argument("--models-dir", help="where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")
        p.add_argument("--json", action="store_true", help=f"print {printed} as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except KeyboardInterrupt:  # the CLI's own message speaks of an index's cache: training keeps none
        done = f" to {args.out}" if args.models_command == "finetune" else ""
        print(f"interrupted: nothing was written{done}; rerun the same command to start again", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    if args.models_command == "finetune":
        names = ("epochs", "batch_size", "lr", "min_steps", "max_steps", "freeze_layers", "device", "seed", "type_head")
        options = {name: getattr(args, name) for name in names}
        summary = finetune(
            args.kind, args.base, args.data, args.out, eval_data=args.eval, models_dir=args.models_dir, **options
        )
        if args.json:
            print(json.dumps(summary, indent=2))
        else:
            f1 = summary["best_eval_f1"]
            chosen = f", eval F1 {100 * f1:.1f} at step {summary['best_step']}" if f1 is not None else ""
            print(
                f"{args.kind} model written to {summary['out']} ({summary['steps']} steps in {summary['seconds']:.0f} s{chosen})"
            )
        return 0
    options = {name: getattr(args, name) for name in ("threshold", "device", "zero_shot", "models_dir")}
    score = evaluate(args.kind, args.model, args.data, **options)
    what = "entities" if args.kind == "gliner" else "relations (given the gold entities)"
    print(json.dumps(score.as_dict(), indent=2) if args.json else f"{what}: {score.line()}")
    return 0
