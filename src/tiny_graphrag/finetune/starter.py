"""The starter GLiNER + GLiREL pair: trained offline from all-MiniLM-L6-v2 on Re-DocRED, cached in models/.

Recipe (all of it in recipe.toml, whose hash names the folder, so a changed recipe trains anew):
- Re-DocRED's 500 documents split by document with a fixed seed into train / dev / test;
- one sentence per example (short inputs keep training within minutes on two cores);
- a held-out "domain" the starter never sees: entity type `date` and the eight relation types whose tail is a date. Its
  mentions and relations are removed from the starter's training data; it exists for the domain adaptation curve (bench)
  and as a test of `models finetune`;
- lower encoder layers frozen, a fixed number of steps; settings were chosen on dev only, and dev F1 picks the
  checkpoint; test is only reported.

`python -m tiny_graphrag.finetune.starter` trains the pair once (`make starter`) and prints its folder; the folder also
gets the splits as friendly JSONL (data/*.jsonl) to try the finetune/evaluate commands. Weights are never committed:
models/ is ignored by git."""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tiny_graphrag.backends.files import models_dir as default_models_dir
from tiny_graphrag.backends.files import resolve_model
from tiny_graphrag.finetune.data import Example, to_friendly, write_jsonl
from tiny_graphrag.finetune.loop import TrainSettings
from tiny_graphrag.finetune.redocred import data_dir, load_documents, sentence_examples, split_documents
from tiny_graphrag.schema import read_toml

log = logging.getLogger(__name__)

RECIPE: dict[str, Any] = read_toml((Path(__file__).parent / "recipe.toml").read_text(encoding="utf-8"))
HELD_OUT_ENTITIES, HELD_OUT_RELATIONS = tuple(RECIPE["held_out"]["entities"]), tuple(RECIPE["held_out"]["relations"])
# For a machine with time or a GPU (`make starter-long`): the same recipe trained longer, each
# checkpoint scored on all of dev.
LONG: dict[str, Any] = {
    **RECIPE,
    "name": "long",
    "gliner": {**RECIPE["gliner"], "max_steps": 5000, "eval_every": 1000, "dev_examples": 364},
    "glirel": {**RECIPE["glirel"], "max_steps": 4000, "eval_every": 1000, "dev_examples": 364},
}
GLINER, GLIREL = "gliner", "glirel"


def recipe_hash(recipe: dict[str, Any] = RECIPE) -> str:
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:10]


def starter_dir(models_dir: str | os.PathLike[str] | None = None, *, long: bool = False) -> Path:
    recipe = LONG if long else RECIPE
    return default_models_dir(models_dir) / f"starter-{'long-' if long else ''}{recipe_hash(recipe)}"


def is_built(folder: Path) -> bool:
    return (folder / GLINER / "gliner_config.json").is_file() and (folder / GLIREL / "glirel_config.json").is_file()


def without_domain(ex: Example) -> Example:
    """The example as the starter sees it: no held-out entity types, no relation touching them or
    of a held-out label."""
    ex = replace(ex, relations=tuple(r for r in ex.relations if r.label not in HELD_OUT_RELATIONS))
    return ex.keep_entities([i for i, e in enumerate(ex.entities) if e.label not in HELD_OUT_ENTITIES])


def in_domain(ex: Example) -> bool:
    return any(e.label in HELD_OUT_ENTITIES for e in ex.entities) or any(
        r.label in HELD_OUT_RELATIONS for r in ex.relations
    )


def splits() -> dict[str, list[Example]]:
    """train/dev/test (held-out types removed), and the domain's sentences fully labelled: domain_pool (from train: what
    fine-tuning learns from), domain_dev (settings are chosen on it) and domain_test (reported only)."""
    docs, rel_info = load_documents()
    part = split_documents(
        docs, RECIPE["split"]["seed"], RECIPE["split"]["dev_documents"], RECIPE["split"]["test_documents"]
    )
    full = {name: [ex for d in ds for ex in sentence_examples(d, rel_info)] for name, ds in part.items()}
    out = {name: [without_domain(ex) for ex in exs] for name, exs in full.items()}
    pool = [ex for ex in full["train"] if in_domain(ex)]
    random.Random(RECIPE["split"]["seed"]).shuffle(pool)  # nested prefixes for the adaptation curve
    out["domain_pool"] = pool
    out["domain_dev"] = [ex for ex in full["dev"] if in_domain(ex)]
    out["domain_test"] = [ex for ex in full["test"] if in_domain(ex)]
    return out


def export_splits(folder: Path, data: dict[str, list[Example]]) -> None:
    for name, exs in data.items():
        write_jsonl(folder / "data" / f"{name}.jsonl", (to_friendly(ex) for ex in exs))


def _settings(part: dict[str, Any], progress: bool) -> TrainSettings:
    names = ("max_steps", "batch_size", "lr", "head_lr", "freeze_layers", "max_words", "eval_every", "seed")
    return TrainSettings(
        epochs=1000.0,  # max_steps decides
        threshold=part.get("eval_threshold", 0.5),
        all_labels=part.get("all_labels", False),  # recipes up to 7 trained GLiNER with sampled negative types
        type_head=part.get("type_head", False),  # its types are the encoder's own to learn from thousands of examples
        progress=progress,
        **{name: part[name] for name in names},
    )


def _trainer(kind: str) -> Any:
    """finetune_gliner or finetune_glirel (imported on use: they load torch)."""
    from tiny_graphrag.finetune import gliner, glirel

    return gliner.finetune_gliner if kind == GLINER else glirel.finetune_glirel


def build_starter(
    models_dir: str | os.PathLike[str] | None = None, *, progress: bool = True, force: bool = False, long: bool = False
) -> Path:
    """Train the pair into models/starter-<recipe hash>/ unless it is there; returns the folder.
    Each model is renamed into place once whole (output.py), so a run stopped midway leaves the
    models it finished, and the next run trains only what is missing."""
    folder, recipe = starter_dir(models_dir, long=long), LONG if long else RECIPE
    if is_built(folder) and not force:
        return folder
    import torch

    encoder = resolve_model(RECIPE["encoder"], kind="embedder", models_dir_=models_dir)
    data = splits()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "recipe.json").write_text(json.dumps(recipe, indent=1), encoding="utf-8")
    export_splits(folder, data)
    info: dict[str, object] = {"recipe_hash": recipe_hash(recipe)}
    record = folder / "training.json"
    report: dict[str, Any] = json.loads(record.read_text(encoding="utf-8")) if record.is_file() and not force else {}
    report.update(info, threads=torch.get_num_threads())
    for kind, options in (
        (GLINER, {k: recipe[GLINER][k] for k in ("rnn_layers", "max_width", "hidden_size")}),
        (GLIREL, {"overrides": recipe[GLIREL]["config"]}),
    ):
        if (folder / kind / f"{kind}_config.json").is_file() and not force:
            log.info("%s of %s is there from an earlier run: training only what is missing", kind, folder)
            continue
        part, t, load = recipe[kind], time.perf_counter(), _load()
        dev = data["dev"][: part["dev_examples"]]
        res = _trainer(kind)(
            encoder, data["train"], dev, folder / kind, _settings(part, progress), extra_info=info, **options
        )
        report[kind] = {
            "seconds": round(time.perf_counter() - t, 1),
            "load": [load, _load()],
            "dev_f1": res.best_f1,
            "history": res.history,
        }
        record.write_text(json.dumps(report, indent=1), encoding="utf-8")
    log.info(
        "starter pair trained in %s (%s)",
        folder,
        ", ".join(f"{k} {report[k]['seconds']:.0f} s" for k in (GLINER, GLIREL) if k in report),
    )
    return folder


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def dry_run(models_dir: str | os.PathLike[str] | None = None) -> str:
    """What `build_starter` would train, with the data loaded and the encoder found, training nothing."""
    encoder = resolve_model(RECIPE["encoder"], kind="embedder", models_dir_=models_dir)
    sizes = ", ".join(f"{name} {len(exs)}" for name, exs in splits().items())
    return f"would train {starter_dir(models_dir)} from {encoder} on Re-DocRED ({data_dir()}) sentences: {sizes}"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tiny_graphrag.finetune.starter", description=__doc__.split("\n")[0])
    p.add_argument("--models-dir", help="where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")
    p.add_argument("--force", action="store_true", help="train again even if the pair is there")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--dry-run", action="store_true", help="load the data and find the encoder, then stop")
    p.add_argument("--long", action="store_true", help="the long recipe (for a machine with time or a GPU)")
    args = p.parse_args(argv)
    if args.dry_run:
        print(dry_run(args.models_dir))
        return 0
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("tiny_graphrag").setLevel(logging.INFO)  # ours: eval F1 per checkpoint, timings
    print(build_starter(args.models_dir, progress=not args.quiet, force=args.force, long=args.long))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
