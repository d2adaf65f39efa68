"""bench/new_domain.py's silver proxy: what it writes must be what `models finetune` reads, and only new types."""

from __future__ import annotations

import json

from bench.new_domain import TYPES, silver_sets, split_of
from tiny_graphrag.finetune.data import parse_record

PASSAGES = {
    "Eiffel Tower": ["The Eiffel Tower was built for the 1889 World's Fair in Paris.", "French engineers designed it."],
    "Hamlet": ["Hamlet is a tragedy by William Shakespeare.", "It was performed at the Globe Theatre in London."],
}


def test_silver_records_are_friendly_examples_of_the_new_types_only(tmp_path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(PASSAGES), encoding="utf-8")
    sets = silver_sets(corpus)
    records = [r for split in sets.values() for r in split]
    assert records, sets  # spaCy finds a facility, an event, a nationality or a work of art here
    for r in records:
        example = parse_record(r)  # the format `models finetune --data` reads
        assert example.entities and {e.label for e in example.entities} <= set(TYPES.values())
        for e in r["entities"]:  # offsets cut out the entity's own words
            assert r["text"][e["start"] : e["end"]].strip() == r["text"][e["start"] : e["end"]]
    assert all(r in sets[split_of(t)] for t in PASSAGES for r in records if r["text"] in " ".join(PASSAGES[t]))
    assert silver_sets(corpus) == sets  # the same split and order every run
