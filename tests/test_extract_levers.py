"""The CPU levers of the GLiNER+GLiREL extractor change the work, not the output.

Length-bucketed batches and pruning the mentions no allowed relation can link are checked on the
real GLiNER/GLiREL classes (tiny random weights) against the same extractor with the levers off.
"""

from __future__ import annotations

import pytest
from _tiny_models import tiny_config

from tiny_graphrag.config import ExtractionConfig
from tiny_graphrag.errors import ConfigError
from tiny_graphrag.extract.base import length_buckets, make_extractor, pairable, type_partners
from tiny_graphrag.extract.gliner import runtime_for
from tiny_graphrag.records import Chunk, EntityMention
from tiny_graphrag.schema import Schema

# Relations only between people, organisations and places: Product and Concept mentions can
# never be linked, so pruning has something to drop. (The random tiny GLiNER tags mostly
# Locations, hence "located in".)
NARROW = Schema.from_dict(
    {
        "entity_types": ["Person", "Organization", "Location", "Product", "Concept"],
        "relation_types": {
            "works for": {"allowed_head": ["Person"], "allowed_tail": ["Organization"]},
            "born in": {"allowed_head": ["Person"], "allowed_tail": ["Location"]},
            "located in": {"allowed_head": ["Organization", "Location"], "allowed_tail": ["Location"]},
            "spouse of": {"allowed_head": ["Person"], "allowed_tail": ["Person"]},
        },
    }
)

SENTENCES = [
    "Barack Obama was born in Hawaii and studied at Harvard Law School.",
    "Angela Merkel lives in Berlin, the capital of Germany.",
    "Marie Curie worked in Paris with Pierre Curie at the University of Paris.",
    "Google is based in Mountain View and sells the Pixel phone.",
    "Ada Lovelace wrote about the Analytical Engine of Charles Babbage in London.",
]


def mixed_chunks() -> list[Chunk]:
    """Chunks of very different lengths, in an order that bucketing changes."""
    texts = [" ".join(SENTENCES[i % 5 : i % 5 + n]) for i, n in enumerate([1, 5, 2, 5, 1, 3, 4, 1, 2, 5])]
    return [
        Chunk(id=f"c{i}", doc_id="d", index=i, text=t, start=0, end=len(t), n_tokens=len(t.split()))
        for i, t in enumerate(texts)
    ]


def signature(results):
    return [
        (
            [(m.start, m.end, m.type) for m in r.entities],
            [(x.head.start, x.head.end, x.tail.start, x.tail.end, x.label) for x in r.relations],
        )
        for r in results
    ]


def scores(results):
    return [m.score for r in results for m in r.entities] + [x.score for r in results for x in r.relations]


class Spy:
    """Records the NER lists GLiREL is called with (wraps the real method)."""

    def __init__(self, model, monkeypatch):
        self.calls: list[list] = []
        real = model.batch_predict_relations

        def wrapper(tokens, labels, **kw):
            self.calls.append(kw["ner"])
            return real(tokens, labels, **kw)

        monkeypatch.setattr(model, "batch_predict_relations", wrapper)

    @property
    def mentions(self) -> int:
        return sum(len(ner) for call in self.calls for ner in call)


def make(models_dir, *, levers: bool, schema=NARROW, **cfg):
    ex = make_extractor(
        schema, tiny_config(relation_threshold=0.0, entity_threshold=0.3, batch_size=3, **cfg), models_dir
    )
    ex.bucket = ex.relations.prune = levers
    return ex


def test_levers_keep_the_extractions_identical(tiny_models_dir, monkeypatch):
    chunks = mixed_chunks()
    plain, fast = make(tiny_models_dir, levers=False), make(tiny_models_dir, levers=True)
    spy = Spy(plain.relations._model(), monkeypatch)  # both extractors share the loaded model
    base = plain.extract(chunks)
    sent_plain, spy.calls = spy.mentions, []
    got = fast.extract(chunks)
    assert signature(got) == signature(base)
    assert scores(got) == pytest.approx(scores(base), abs=1e-5)
    assert sum(len(r.relations) for r in base) > 0  # the comparison covers relations, not only entities
    # ... and the levers did work: fewer mentions went to GLiREL
    assert 0 < spy.mentions < sent_plain


def test_bucketed_batches_group_similar_lengths():
    lengths = [30, 300, 60, 290, 31, 150, 200, 29, 61, 310]
    batches = length_buckets(lengths, 3)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) <= 3
        assert min(lengths[i] for i in b) >= 0.8 * max(lengths[i] for i in b)
    assert batches[0] == [9, 1, 3]  # longest first
    with pytest.raises(ValueError, match="batch_size"):
        length_buckets(lengths, 0)


def mention(text: str, word: str, type_: str) -> EntityMention:
    start = text.index(word)
    return EntityMention(text=word, type=type_, start=start, end=start + len(word), score=0.9)


def test_chunk_without_an_allowed_pair_never_reaches_glirel(tiny_models_dir, monkeypatch):
    ex = make(tiny_models_dir, levers=True)
    spy = Spy(ex.relations._model(), monkeypatch)
    text = "Google sells the Pixel phone and the Nest speaker."
    products = [mention(text, "Pixel", "Product"), mention(text, "Nest", "Product")]
    assert ex.relations.predict([text], [products]) == [[]]
    assert spy.calls == []
    ex.relations.prune = False  # without pruning GLiREL runs, and the schema drops all it finds
    assert ex.relations.predict([text], [products]) == [[]]
    assert len(spy.calls) == 1


def test_pruning_on_hand_made_mentions_matches_the_full_call(tiny_models_dir, monkeypatch):
    text = "Barack Obama worked for Google in Chicago and wrote about the Pixel and about democracy."
    ms = [
        mention(text, "Barack Obama", "Person"),
        mention(text, "Google", "Organization"),
        mention(text, "Chicago", "Location"),
        mention(text, "Pixel", "Product"),
        mention(text, "democracy", "Concept"),
    ]
    ex = make(tiny_models_dir, levers=True)
    spy = Spy(ex.relations._model(), monkeypatch)
    pruned = ex.relations.predict([text], [ms])[0]
    assert [n[2] for n in spy.calls[0][0]] == ["Person", "Organization", "Location"]
    ex.relations.prune = False
    full = ex.relations.predict([text], [ms])[0]
    assert len(spy.calls[1][0]) == 5
    assert [(r.head.text, r.tail.text, r.label) for r in pruned] == [(r.head.text, r.tail.text, r.label) for r in full]
    assert [r.score for r in pruned] == pytest.approx([r.score for r in full], abs=1e-5)
    assert pruned  # threshold 0: there is something to compare


def test_pruning_is_off_when_glirel_reads_mentions_jointly(tiny_models_dir, monkeypatch):
    ex = make(tiny_models_dir, levers=True)
    model = ex.relations._model()
    monkeypatch.setattr(model.config, "refine_prompt", True, raising=False)  # attends across pairs
    spy = Spy(model, monkeypatch)
    text = "Barack Obama worked for Google and wrote about the Pixel."
    ms = [
        mention(text, "Barack Obama", "Person"),
        mention(text, "Google", "Organization"),
        mention(text, "Pixel", "Product"),
    ]
    ex.relations.predict([text], [ms])
    assert len(spy.calls[0][0]) == 3  # all mentions sent


def test_pairable_unit():
    partners = type_partners(NARROW)
    assert partners["Product"] == set() and partners["Person"] == {"Person", "Organization", "Location"}
    assert partners["Organization"] == {"Person", "Location"}
    p1, p2 = EntityMention("A", "Person", 0, 1, 1.0), EntityMention("B", "Person", 2, 3, 1.0)
    prod = EntityMention("C", "Product", 4, 5, 1.0)
    assert pairable([p1, prod], partners) == set()  # one person alone has no partner
    assert pairable([p1, p2, prod], partners) == {id(p1), id(p2)}  # spouse of: Person-Person
    # the general preset's "related to" allows any pair: nothing is pruned there
    assert all(len(v) == 5 for v in type_partners(Schema.preset("general")).values())


# ---- int8 ---------------------------------------------------------------------------------
def test_int8_extraction_runs_and_is_recorded(tiny_models_dir):
    chunks = mixed_chunks()[:4]
    q = make(tiny_models_dir, levers=True, quantize="int8")
    f = make(tiny_models_dir, levers=True)
    assert q.describe()["dtype"] == "int8-dynamic" and f.describe()["dtype"] == "float32"  # distinct cache keys
    assert q.relations._model() is not f.relations._model()
    assert "DynamicQuantizedLinear" in repr(q.relations._model())
    for chunk, res in zip(chunks, q.extract(chunks)):
        for m in res.entities:
            assert chunk.text[m.start : m.end] == m.text


def test_int8_settings_are_checked():
    with pytest.raises(ConfigError, match="quantize"):
        ExtractionConfig(quantize="int4")
    with pytest.raises(ConfigError, match="CPU only"):
        runtime_for(ExtractionConfig(quantize="int8", device="meta"))
