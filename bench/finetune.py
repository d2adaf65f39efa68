"""The starter GLiNER + GLiREL pair against spaCy and lookup tables on Re-DocRED dev and test, and the
domain adaptation curve.

`python -m bench.finetune [--out bench/out/finetune.json] [--no-curve] [--long] [--sizes 25 50 100 200]`
(trains the starter first if it is missing; --long also the long recipe; the curve fine-tunes 4 x 2 models).

All scores come from tiny_graphrag.finetune.score (the scorer of `models evaluate`): micro P/R/F1,
exact word span + type for entities, head span + tail span + label for relations, within a sentence
(one example per sentence), with 95% bootstrap intervals over sentences, on all of dev and test, the
starter's training types only (the held-out domain's are removed). Every setting is chosen on dev.
- spaCy: en_core_web_sm NER with bench's fixed map onto Re-DocRED's types, and with a map learned on
  train (bench/lookup.py: the fair bar);
- the lookup tables of bench/lookup.py (gazetteer; type-pair and back-off relations given gold entities);
- the starter: GLiNER's entities; GLiREL given the gold entities (at its recorded threshold, and under
  the schema learned from train: each label only between the type pairs it joins there, the best label
  per pair, at a threshold chosen on dev); end to end (GLiNER -> GLiREL under that schema);
- the hybrid: spaCy's learned-map entities -> the starter's GLiREL under that schema (what the spaCy
  extractor does with a GLiREL model and a user's schema);
- the curve: the starter fine-tuned on the first N sentences of the held-out domain (a fixed shuffle
  of train-split sentences with a date) with the defaults of `models finetune` (no eval set, as a user
  with N labelled sentences would run it), scored on the domain's test sentences over the held-out
  labels only, each model at its own recorded threshold as `models evaluate` does; N = 0 is the
  starter zero-shot. The defaults were chosen on the domain's dev sentences (`--on dev`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tiny_graphrag.extract.glirel_input import glirel_relations
from tiny_graphrag.finetune import starter
from tiny_graphrag.finetune.data import Example, Relation
from tiny_graphrag.finetune.gliner import finetune_gliner
from tiny_graphrag.finetune.gliner import load_scored as load_gliner  # with its type head, as `models evaluate`
from tiny_graphrag.finetune.gliner import predict as gliner_predict
from tiny_graphrag.finetune.glirel import evaluate_glirel, finetune_glirel
from tiny_graphrag.finetune.glirel import load_base as load_glirel
from tiny_graphrag.finetune.glirel import predict as glirel_predict
from tiny_graphrag.finetune.labels import recorded_threshold
from tiny_graphrag.finetune.loop import THRESHOLDS, TrainSettings
from tiny_graphrag.finetune.score import score_entities, score_relations

from . import lookup

log = logging.getLogger("bench.finetune")
Allowed = dict[str, set[tuple[str, str]]]
SPACY_TO_TYPES = {
    "PERSON": "person",
    "ORG": "organization",
    "GPE": "location",
    "LOC": "location",
    "FAC": "location",
    "DATE": "date",
    "TIME": "date",
    "CARDINAL": "number",
    "QUANTITY": "number",
    "MONEY": "number",
    "PERCENT": "number",
    "ORDINAL": "number",
    "NORP": "miscellaneous",
    "EVENT": "miscellaneous",
    "WORK_OF_ART": "miscellaneous",
    "LAW": "miscellaneous",
    "LANGUAGE": "miscellaneous",
    "PRODUCT": "miscellaneous",
}


def only(examples: list[Example], ents: set[str] | None, rels: set[str] | None) -> list[Example]:
    """Examples with only the given entity labels and relation labels (None: all)."""
    out = []
    for ex in examples:
        keep = [i for i, e in enumerate(ex.entities) if ents is None or e.label in ents]
        new = {o: k for k, o in enumerate(keep)}
        rr = tuple(
            Relation(new[r.head], new[r.tail], r.label)
            for r in ex.relations
            if r.head in new and r.tail in new and (rels is None or r.label in rels)
        )
        out.append(replace(ex, entities=tuple(ex.entities[i] for i in keep), relations=rr))
    return out


def relations_between_all(ex: Example, rels: set[str] | None) -> Example:
    """Keep all entities (GLiREL reads them), only the given relation labels."""
    return replace(ex, relations=tuple(r for r in ex.relations if rels is None or r.label in rels))


def constrained(model: Any, examples: list[Example], labels: list[str], at: float, allowed: Allowed) -> list[Example]:
    """GLiREL's relations between each example's entities, those the schema learned from train allows
    between their types, then the best label per pair (as the extractor applies a user's schema)."""
    out = []
    for k in range(0, len(examples), 8):
        exs = [replace(ex, relations=()) for ex in examples[k : k + 8]]
        spans = [[(e.first, e.last, e.label) for e in ex.entities] for ex in exs]
        found = glirel_relations(
            model, [list(x.tokens) for x in exs], spans, labels, at, lambda lab, h, t: (h, t) in allowed.get(lab, ())
        )
        for ex, rels in zip(exs, found):
            where = {(e.first, e.last): n for n, e in enumerate(ex.entities)}
            best: dict[tuple[int, int], Relation] = {}
            for h, t, lab, score in sorted(rels, key=lambda r: (-r[3], r[2])):
                best.setdefault((where[h], where[t]), Relation(where[h], where[t], lab, score))
            out.append(replace(ex, relations=tuple(best.values())))
    return out


def learned_schema(train: list[Example]) -> Allowed:
    """relation label -> the (head type, tail type) pairs it joins in train: the schema a user would write."""
    allowed: Allowed = {}
    for ex in train:
        for r in ex.relations:
            allowed.setdefault(r.label, set()).add((ex.entities[r.head].label, ex.entities[r.tail].label))
    return allowed


def _score(s: Any) -> dict[str, Any]:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.as_dict().items()}


def curve(
    folder: Path, data: dict[str, list[Example]], sizes: list[int], work: Path, n_test: int, on: str = "test"
) -> dict[str, Any]:
    held_e, held_r = set(starter.HELD_OUT_ENTITIES), set(starter.HELD_OUT_RELATIONS)
    test = data[f"domain_{on}"][:n_test]
    gold_e = only(test, held_e, set())
    gold_r = [relations_between_all(ex, held_r) for ex in test]
    rows = []
    for n in [0, *sizes]:
        row: dict[str, Any] = {"sentences": n}
        if n == 0:
            g, r = folder / "gliner", folder / "glirel"
        else:
            train = data["domain_pool"][:n]
            s = TrainSettings(progress=False)  # the defaults of `models finetune`; no eval set: the last step
            g, r = work / f"g{n}", work / f"r{n}"
            t = time.perf_counter()
            res = finetune_gliner(folder / "gliner", train, None, g, s)
            row["gliner_seconds"] = round(time.perf_counter() - t, 1)
            row["gliner_s_per_100_examples"] = round(100 * res.seconds / (res.steps * s.batch_size), 2)
            t = time.perf_counter()
            res = finetune_glirel(folder / "glirel", train, None, r, s)
            row["glirel_seconds"] = round(time.perf_counter() - t, 1)
            row["glirel_s_per_100_examples"] = round(100 * res.seconds / (res.steps * s.batch_size), 2)
        pred = gliner_predict(load_gliner(g), test, sorted(held_e), recorded_threshold(g))
        row["entity"] = _score(score_entities(only(pred, held_e, set()), gold_e))
        rel = glirel_predict(load_glirel(r), test, sorted(held_r), recorded_threshold(r))
        row["relation_given_entities"] = _score(score_relations(rel, gold_r))
        log.info(
            "curve n=%d: entity F1 %.3f, relation F1 %.3f", n, row["entity"]["f1"], row["relation_given_entities"]["f1"]
        )
        rows.append(row)
    return {
        "scored_on": f"domain_{on}",
        "domain_sentences": len(test),
        "held_out_entities": sorted(held_e),
        "held_out_relations": sorted(held_r),
        "rows": rows,
    }


def run(
    sizes: list[int] | None,
    models_dir: str | None = None,
    n_test: int = 200,
    on: str = "test",
    curve_only: bool = False,
    long: bool = False,
) -> dict[str, Any]:
    folder = starter.build_starter(models_dir, progress=False)
    long_folder = starter.build_starter(models_dir, progress=False, long=True) if long else None
    data = starter.splits()
    out: dict[str, Any] = {"load_start": os.getloadavg()}
    if not curve_only:
        out.update(compare(folder, data, long_folder))
    if sizes is not None:
        with tempfile.TemporaryDirectory(prefix="tgr-curve-") as work:
            out["curve"] = curve(folder, data, sizes, Path(work), n_test, on)
    out["load_end"] = os.getloadavg()
    return out


def compare(folder: Path, data: dict[str, list[Example]], long_folder: Path | None = None) -> dict[str, Any]:
    """On dev and test: spaCy (bench's fixed map and a map learned on train), the lookup tables, the
    starter pair (and the long recipe's), and the hybrid (spaCy's learned map -> the starter's GLiREL).
    Every setting is chosen on dev (the lookup tables', GLiREL's threshold under the learned schema)."""
    train = data["train"]
    ent_labels = sorted({e.label for ex in train for e in ex.entities})
    rel_labels = sorted({r.label for ex in train for r in ex.relations})
    allowed = learned_schema(train)
    tables = lookup.baselines(data)
    spacy_map = tables["spacy_learned_map"]["setting"]["map"]
    models = {"starter": folder} | ({"long": long_folder} if long_folder else {})
    loaded = {name: (load_gliner(f / "gliner"), load_glirel(f / "glirel")) for name, f in models.items()}
    # GLiREL's threshold under the learned schema, chosen on dev (its recorded one was chosen without)
    dev = data["dev"]
    at_rel = {}
    for name, (_, gr) in loaded.items():
        rels = constrained(gr, dev, rel_labels, min(THRESHOLDS), allowed)
        at_rel[name] = max(THRESHOLDS, key=lambda t: (score_relations(evaluate_glirel.above(rels, t), dev).f1, t))
    out: dict[str, Any] = {
        "entity_labels": ent_labels,
        "relation_labels": len(rel_labels),
        "lookup_settings": {k: v["setting"] for k, v in tables.items()},
        "glirel_threshold_with_schema": at_rel,
        "training": {name: json.loads((f / "training.json").read_text(encoding="utf-8")) for name, f in models.items()},
    }
    for split in ("dev", "test"):
        exs = data[split]
        words = sum(len(ex.tokens) for ex in exs)
        row: dict[str, Any] = {"sentences": len(exs), "words": words}
        spans = lookup.spacy_spans(exs)
        fixed = {k: v for k, v in SPACY_TO_TYPES.items() if v in ent_labels}
        row["spacy_fixed_map"] = {"entity": _score(score_entities(lookup.mapped(exs, spans, fixed), exs))}
        sp = lookup.mapped(exs, spans, spacy_map)
        row["spacy_learned_map"] = {"entity": _score(score_entities(sp, exs))}
        row["lookup"] = {k: v[split] for k, v in tables.items()}
        for name, (gl, gr) in loaded.items():
            f = models[name]
            t = time.perf_counter()
            ents = gliner_predict(gl, exs, ent_labels, recorded_threshold(f / "gliner"))
            t_ent = time.perf_counter() - t
            t = time.perf_counter()
            e2e = constrained(gr, ents, rel_labels, at_rel[name], allowed)
            t_rel = time.perf_counter() - t
            row[name] = {
                "entity": _score(score_entities(ents, exs)),
                "relation_given_entities": _score(
                    score_relations(glirel_predict(gr, exs, rel_labels, recorded_threshold(f / "glirel")), exs)
                ),
                "relation_given_entities_schema": _score(
                    score_relations(constrained(gr, exs, rel_labels, at_rel[name], allowed), exs)
                ),
                "relation_end_to_end": _score(score_relations(e2e, exs)),
                "words_per_s": round(words / (t_ent + t_rel), 1),
            }
            row[f"hybrid_{name}"] = {
                "entity": row["spacy_learned_map"]["entity"],
                "relation_end_to_end": _score(
                    score_relations(constrained(gr, sp, rel_labels, at_rel[name], allowed), exs)
                ),
            }
        out[split] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("bench/out/finetune.json"))
    ap.add_argument("--sizes", type=int, nargs="*", default=[25, 50, 100, 200])
    ap.add_argument("--models-dir")
    ap.add_argument("--long", action="store_true", help="also the long recipe (trained first if missing)")
    ap.add_argument("--domain-test", type=int, default=200, help="domain sentences scored")
    ap.add_argument("--on", choices=["dev", "test"], default="test", help="the domain's split the curve is scored on")
    ap.add_argument("--curve-only", action="store_true", help="only the adaptation curve")
    ap.add_argument("--no-curve", action="store_true", help="only spaCy against the starter")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    sizes = None if args.no_curve else args.sizes
    res = run(sizes, args.models_dir, args.domain_test, args.on, args.curve_only, args.long)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1), encoding="utf-8")
    print(json.dumps({k: v for k, v in res.items() if k != "curve"}, indent=1))
    for row in res.get("curve", {}).get("rows", []):
        print(row)


if __name__ == "__main__":
    main()
