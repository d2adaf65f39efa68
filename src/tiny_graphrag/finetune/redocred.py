"""Re-DocRED as examples: one sentence per example, mentions as entities, same-sentence relations.

The dev split ships inside the package (redocred_data/: xz-compressed, with its source and licence in README.md), so an
installed package trains the starter offline with no checkout beside it. Tokens are joined by spaces and re-split with
the extractor's tokenization (WORD_RE), so training, evaluation and extraction see the same words."""

from __future__ import annotations

import json
import lzma
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tiny_graphrag.errors import InputError
from tiny_graphrag.finetune.data import Example, from_friendly

# Re-DocRED's entity types as words a label-prompted model can read
TYPE_NAMES = {
    "PER": "person",
    "ORG": "organization",
    "LOC": "location",
    "TIME": "date",
    "NUM": "number",
    "MISC": "miscellaneous",
}
DATA_DIR = Path(__file__).with_name("redocred_data")


def data_dir() -> Path:
    """The package's copy of Re-DocRED (package data, installed with the library)."""
    if not (DATA_DIR / "rel_info.json").is_file() or not (DATA_DIR / "dev_revised.json.xz").is_file():
        raise InputError(
            f"Re-DocRED is missing from the installed package: expected dev_revised.json.xz and rel_info.json "
            f"in {DATA_DIR}. To fix: reinstall tiny-graphrag (pip install --force-reinstall tiny-graphrag; "
            "in a checkout: git restore that folder)"
        )
    return DATA_DIR


def load_documents(folder: Path | None = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    folder = folder or data_dir()
    xz = folder / "dev_revised.json.xz"
    raw = lzma.decompress(xz.read_bytes()) if xz.is_file() else (folder / "dev_revised.json").read_bytes()
    rel_info = json.loads((folder / "rel_info.json").read_text(encoding="utf-8"))
    return json.loads(raw.decode("utf-8")), rel_info


def sentence_examples(doc: Mapping[str, Any], rel_info: Mapping[str, str]) -> list[Example]:
    """One example per sentence of a document: its mentions, and the relations between two of them."""
    per_sent: list[list[tuple[int, dict[str, Any]]]] = [[] for _ in doc["sents"]]
    for ei, entity in enumerate(doc["vertexSet"]):
        for m in entity:
            per_sent[m["sent_id"]].append((ei, m))
    by_pair: dict[tuple[int, int], list[str]] = {}
    for lab in doc.get("labels", []):
        by_pair.setdefault((lab["h"], lab["t"]), []).append(rel_info.get(lab["r"], lab["r"]))
    out = []
    for si, sent in enumerate(doc["sents"]):
        text, offsets = Example(tuple(sent)).joined()
        ents: list[dict[str, object]] = []
        seen: dict[tuple[int, int], int] = {}
        owner: list[int] = []
        for ei, m in sorted(per_sent[si], key=lambda x: (x[1]["pos"][0], x[1]["pos"][1])):
            s, e = m["pos"]
            span = (offsets[s][0], offsets[e - 1][1])
            if span in seen:  # one mention can belong to two entities in rare annotations
                continue
            seen[span] = len(ents)
            ents.append({"start": span[0], "end": span[1], "label": TYPE_NAMES.get(m["type"], m["type"])})
            owner.append(ei)
        rels = []
        for i, hi in enumerate(owner):
            for j, ti in enumerate(owner):
                if i != j and hi != ti:
                    for label in by_pair.get((hi, ti), []):
                        rels.append({"head": i, "tail": j, "label": label})
        ex = from_friendly({"text": text, "entities": ents, "relations": rels}, f"{doc['title']}#{si}")
        out.append(ex)
    return out


def split_documents(docs: Sequence[dict[str, Any]], seed: int, dev: int, test: int) -> dict[str, list[dict[str, Any]]]:
    """Documents shuffled with `seed`, then the first `test`, the next `dev`, and the rest to train."""
    order = list(range(len(docs)))
    random.Random(seed).shuffle(order)
    pick = [docs[i] for i in order]
    return {"test": pick[:test], "dev": pick[test : test + dev], "train": pick[test + dev :]}
