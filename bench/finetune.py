"""The starter GLiNER + GLiREL pair against spaCy on Re-DocRED's test split, and the domain adaptation curve.

`python -m bench.finetune [--out bench/out/finetune.json] [--sizes 25 50 100 200]` (trains the starter
first if it is missing: ~10 minutes on two cores; the curve fine-tunes 4 x 2 models).

All scores come from tiny_graphrag.finetune.score (the scorer of `models evaluate`): micro P/R/F1,
exact word span + type for entities, head span + tail span + label for relations, within a sentence
(one example per sentence), with 95% bootstrap intervals over sentences.
- "seen" types: the starter's training types (everything but the held-out domain);
- spaCy: en_core_web_sm NER mapped onto Re-DocRED's types; its relations are co-occurrence links
  labelled "related to", which is no Re-DocRED label, so its relation F1 is 0 by construction;
- starter end to end: GLiNER's entities, then GLiREL between them; GLiREL alone: given gold entities;
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

from tiny_graphrag.finetune import starter
from tiny_graphrag.finetune.data import Example, Relation, Span
from tiny_graphrag.finetune.gliner import char_to_words, finetune_gliner
from tiny_graphrag.finetune.gliner import load_base as load_gliner
from tiny_graphrag.finetune.gliner import predict as gliner_predict
from tiny_graphrag.finetune.glirel import finetune_glirel
from tiny_graphrag.finetune.glirel import load_base as load_glirel
from tiny_graphrag.finetune.glirel import predict as glirel_predict
from tiny_graphrag.finetune.labels import recorded_threshold
from tiny_graphrag.finetune.loop import TrainSettings
from tiny_graphrag.finetune.score import score_entities, score_relations

log = logging.getLogger("bench.finetune")
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


def spacy_run(test: list[Example]) -> tuple[list[Example], float]:
    from tiny_graphrag.extract.spacy_ner import load_spacy

    nlp = load_spacy("en_core_web_sm")
    t = time.perf_counter()
    out = []
    for ex, doc in zip(test, nlp.pipe([ex.joined()[0] for ex in test], batch_size=64)):
        offs = ex.joined()[1]
        spans = []
        for e in doc.ents:
            w = char_to_words(offs, e.start_char, e.end_char)
            if w and e.label_ in SPACY_TO_TYPES:
                spans.append(Span(w[0], w[1], SPACY_TO_TYPES[e.label_]))
        # co-occurrence: every pair of mentions of the sentence, labelled "related to"
        rels = tuple(Relation(i, j, "related to") for i in range(len(spans)) for j in range(i + 1, len(spans)))
        out.append(replace(ex, entities=tuple(spans), relations=rels))
    return out, time.perf_counter() - t


def starter_run(folder: Path, test: list[Example], ent_labels: list[str], rel_labels: list[str]) -> dict[str, Any]:
    gl, gr = load_gliner(folder / "gliner"), load_glirel(folder / "glirel")
    # each at the threshold chosen on dev when it was trained, as `models evaluate` and the demo use it
    at_e, at_r = recorded_threshold(folder / "gliner"), recorded_threshold(folder / "glirel")
    t = time.perf_counter()
    ents = gliner_predict(gl, test, ent_labels, at_e)
    t_ent = time.perf_counter() - t
    t = time.perf_counter()
    e2e = glirel_predict(gr, ents, rel_labels, at_r)
    t_rel = time.perf_counter() - t
    given = glirel_predict(gr, test, rel_labels, at_r)
    return {"entities": ents, "end_to_end": e2e, "given_gold": given, "seconds": t_ent + t_rel, "gliner_s": t_ent}


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
    n_main: int = 400,
    on: str = "test",
    curve_only: bool = False,
) -> dict[str, Any]:
    folder = starter.build_starter(models_dir, progress=False)
    data = starter.splits()
    out: dict[str, Any] = {"load_start": os.getloadavg()}
    if not curve_only:
        out.update(compare(folder, data, n_main))
    if sizes is not None:
        with tempfile.TemporaryDirectory(prefix="tgr-curve-") as work:
            out["curve"] = curve(folder, data, sizes, Path(work), n_test, on)
    out["load_end"] = os.getloadavg()
    return out


def compare(folder: Path, data: dict[str, list[Example]], n_main: int) -> dict[str, Any]:
    """spaCy and the starter pair on the test split's seen types."""
    training = json.loads((folder / "training.json").read_text(encoding="utf-8"))
    test = data["test"][:n_main]  # held-out labels already removed
    ent_labels = sorted({e.label for ex in data["train"] for e in ex.entities})
    rel_labels = sorted({r.label for ex in data["train"] for r in ex.relations})
    words = sum(len(ex.tokens) for ex in test)
    out: dict[str, Any] = {
        "test_sentences": len(test),
        "test_words": words,
        "entity_labels": ent_labels,
        "relation_labels": len(rel_labels),
        "training": {k: training[k] for k in ("gliner", "glirel", "load", "load_after", "threads") if k in training},
    }
    sp, sp_s = spacy_run(test)
    sp = only(sp, set(ent_labels), None)
    out["spacy"] = {
        "entity": _score(score_entities(sp, test)),
        "relation": _score(score_relations(sp, test)),
        "words_per_s": round(words / sp_s, 1),
    }
    st = starter_run(folder, test, ent_labels, rel_labels)
    out["starter"] = {
        "entity": _score(score_entities(st["entities"], test)),
        "relation_end_to_end": _score(score_relations(st["end_to_end"], test)),
        "relation_given_entities": _score(score_relations(st["given_gold"], test)),
        "words_per_s": round(words / st["seconds"], 1),
        "gliner_words_per_s": round(words / st["gliner_s"], 1),
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("bench/out/finetune.json"))
    ap.add_argument("--sizes", type=int, nargs="*", default=[25, 50, 100, 200])
    ap.add_argument("--models-dir")
    ap.add_argument("--test", type=int, default=400, help="test sentences scored (of 889)")
    ap.add_argument("--domain-test", type=int, default=200, help="domain sentences scored")
    ap.add_argument("--on", choices=["dev", "test"], default="test", help="the domain's split the curve is scored on")
    ap.add_argument("--curve-only", action="store_true", help="only the adaptation curve")
    ap.add_argument("--no-curve", action="store_true", help="only spaCy against the starter")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    sizes = None if args.no_curve else args.sizes
    res = run(sizes, args.models_dir, args.domain_test, args.test, args.on, args.curve_only)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1), encoding="utf-8")
    print(json.dumps({k: v for k, v in res.items() if k != "curve"}, indent=1))
    for row in res.get("curve", {}).get("rows", []):
        print(row)


if __name__ == "__main__":
    main()
