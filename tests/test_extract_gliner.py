"""GLiNER + GLiREL extractor, end to end on real GLiNER/GLiREL classes with tiny random weights."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _tiny_models import TINY_GLINER, TINY_GLIREL, tiny_config

from tiny_graphrag.errors import InputError, MissingDependencyError, ModelLoadError, ModelNotFoundError
from tiny_graphrag.extract.base import (
    Extractor,
    best_label_per_pair,
    check_extraction,
    dedupe_mentions,
    enforce_constraints,
    make_extractor,
)
from tiny_graphrag.records import Chunk, EntityMention, RelationMention
from tiny_graphrag.schema import Schema

TEXTS = [
    "Barack Obama was born in Hawaii and studied at Harvard Law School.",
    "Angela Merkel lives in Berlin, the capital of Germany.",
    "",
    "Marie Curie worked in Paris with Pierre Curie at the University of Paris.",
    "Google is based in Mountain View.",
]


def make_chunks(texts=TEXTS) -> list[Chunk]:
    return [
        Chunk(id=f"c{i}", doc_id="d1", index=i, text=t, start=0, end=len(t), n_tokens=len(t.split()))
        for i, t in enumerate(texts)
    ]


def spans(extraction) -> set[tuple[int, int, str, str]]:
    return {(m.start, m.end, m.type, m.text) for m in extraction.entities}


def rel_keys(extraction) -> set[tuple]:
    return {(r.head.start, r.head.end, r.tail.start, r.tail.end, r.label) for r in extraction.relations}


@pytest.fixture(scope="module")
def general() -> Schema:
    return Schema.preset("general")


# ---- import hygiene -----------------------------------------------------------------------
def test_import_loads_no_heavy_module():
    code = (
        "import sys, tiny_graphrag, tiny_graphrag.extract.base, tiny_graphrag.extract.gliner, "
        "tiny_graphrag.extract.spacy_ner\n"
        "heavy = [m for m in ('torch', 'gliner', 'glirel', 'spacy', 'transformers') if m in sys.modules]\n"
        "print(heavy)\nsys.exit(1 if heavy else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---- end to end on the tiny models --------------------------------------------------------
def test_extract_end_to_end_invariants(tiny_models_dir, general, no_network, capsys):
    ex = make_extractor(general, tiny_config(relation_threshold=0.0), models_dir=tiny_models_dir)
    assert isinstance(ex, Extractor) and ex.name == "gliner"
    chunks = make_chunks()
    results = ex.extract(chunks, progress=True)

    assert [r.chunk_id for r in results] == [c.id for c in chunks]
    assert results[2].entities == () and results[2].relations == ()  # empty text
    assert sum(len(r.entities) for r in results) > 0
    assert sum(len(r.relations) for r in results) > 0
    for chunk, res in zip(chunks, results):
        check_extraction(chunk, res)
        for m in res.entities:
            assert chunk.text[m.start : m.end] == m.text  # offsets reproduce the text
            assert m.type in general.entity_types
        ids = {id(m) for m in res.entities}
        for r in res.relations:
            # endpoints are the very mention objects of this chunk, not rebuilt copies
            assert id(r.head) in ids and id(r.tail) in ids
            assert general.allows(r.label, r.head.type, r.tail.type)
            assert (r.head.start, r.head.end) != (r.tail.start, r.tail.end)
        pairs = [(r.head.start, r.head.end, r.tail.start, r.tail.end) for r in res.relations]
        assert len(pairs) == len(set(pairs))  # one label per ordered pair
    assert capsys.readouterr().out == ""  # progress and logs never go to stdout


def test_batching_gives_same_result_as_one_at_a_time(tiny_models_dir, general):
    chunks = make_chunks()
    batched = make_extractor(general, tiny_config(batch_size=3, relation_threshold=0.0), tiny_models_dir)
    single = make_extractor(general, tiny_config(batch_size=1, relation_threshold=0.0), tiny_models_dir)
    a, b = batched.extract(chunks), single.extract(chunks)
    for x, y in zip(a, b):
        assert spans(x) == spans(y)
        assert rel_keys(x) == rel_keys(y)
        for m, n in zip(x.entities, y.entities):
            assert m.score == pytest.approx(n.score, abs=1e-4)
        for r, s in zip(x.relations, y.relations):
            assert r.score == pytest.approx(s.score, abs=1e-4)


def test_entity_threshold_is_honoured(tiny_models_dir, general):
    chunks = make_chunks()

    def run(threshold: float):
        ex = make_extractor(general, tiny_config(entity_threshold=threshold, relation_threshold=0.0), tiny_models_dir)
        return ex.extract(chunks)

    none, high, low = run(1.0), run(0.52), run(0.0)
    assert all(r.entities == () and r.relations == () for r in none)
    n_high = sum(len(r.entities) for r in high)
    n_low = sum(len(r.entities) for r in low)
    assert n_low > n_high > 0
    for h, l in zip(high, low):
        assert spans(h) <= spans(l)  # a lower threshold only adds mentions
        assert all(m.score > 0.52 for m in h.entities)


def test_relation_threshold_is_honoured(tiny_models_dir, general):
    chunks = make_chunks()

    def run(threshold: float):
        ex = make_extractor(general, tiny_config(relation_threshold=threshold), tiny_models_dir)
        return ex.extract(chunks)

    none, mid, low = run(1.0), run(0.503), run(0.0)
    assert sum(len(r.entities) for r in none) > 0
    assert all(r.relations == () for r in none)
    assert sum(len(r.relations) for r in low) > sum(len(r.relations) for r in mid) > 0
    for m, l in zip(mid, low):
        assert rel_keys(m) <= rel_keys(l)
        assert all(r.score > 0.503 for r in m.relations)


def test_max_entity_pair_distance_drops_far_pairs_both_ways(tiny_models_dir, general, tmp_path):
    """GLiREL keeps pairs beyond its max_entity_pair_distance in one direction; the extractor drops
    them in both."""
    from tiny_graphrag.extract.gliner import clear_model_cache, word_spans

    models = tmp_path / "models"
    shutil.copytree(tiny_models_dir, models)
    chunks = make_chunks()
    cfg = tiny_config(relation_threshold=0.0, entity_threshold=0.0)
    everything = make_extractor(general, cfg, models).extract(chunks)
    config_file = models / TINY_GLIREL / "glirel_config.json"
    config = json.loads(config_file.read_text())
    config_file.write_text(json.dumps(config | {"max_entity_pair_distance": 3}))
    clear_model_cache()
    near = make_extractor(general, cfg, models).extract(chunks)

    def distance(chunk, r) -> int:
        starts = [s for s, _ in word_spans(chunk.text)]
        return abs(starts.index(r.head.start) - starts.index(r.tail.start))

    assert any(distance(c, r) > 3 for c, x in zip(chunks, everything) for r in x.relations), "precondition"
    kept = [(c, r) for c, x in zip(chunks, near) for r in x.relations]
    assert kept and all(distance(c, r) <= 3 for c, r in kept)
    for n, e in zip(near, everything):
        assert rel_keys(n) <= rel_keys(e)


def test_relation_constraints_filter_model_output(tiny_models_dir):
    free = Schema.from_dict({"entity_types": ["Person", "Location"], "relation_types": ["linked"]})
    strict = Schema.from_dict(
        {
            "entity_types": ["Person", "Location"],
            "relation_types": {"linked": {"allowed_head": ["Person"], "allowed_tail": ["Location"]}},
        }
    )
    chunks = make_chunks()
    cfg = tiny_config(relation_threshold=0.0, entity_threshold=0.0)
    loose = make_extractor(free, cfg, tiny_models_dir).extract(chunks)
    tight = make_extractor(strict, cfg, tiny_models_dir).extract(chunks)

    loose_types = {(r.head.type, r.tail.type) for x in loose for r in x.relations}
    assert loose_types - {("Person", "Location")}, "precondition: the model proposes other type pairs"
    tight_rels = [r for x in tight for r in x.relations]
    assert tight_rels, "precondition: some Person -> Location pairs exist"
    assert all((r.head.type, r.tail.type) == ("Person", "Location") for r in tight_rels)
    # the same entities either way: constraints only filter relations
    assert [spans(x) for x in loose] == [spans(x) for x in tight]


def test_schema_without_relation_types_needs_no_glirel(tiny_models_dir):
    schema = Schema.from_dict({"entity_types": ["Person", "Location"]})
    ex = make_extractor(schema, tiny_config(glirel_model="not-there"), tiny_models_dir)
    res = ex.extract(make_chunks())
    assert any(r.entities for r in res) and all(r.relations == () for r in res)
    assert ex.describe()["glirel_model"] is None


def test_models_load_once_per_process(tiny_models_dir, general):
    from tiny_graphrag.extract import gliner as mod

    a = make_extractor(general, tiny_config(), tiny_models_dir)
    b = make_extractor(general, tiny_config(entity_threshold=0.3), tiny_models_dir)
    a.extract(make_chunks()[:1])
    b.extract(make_chunks()[:1])
    rt = mod.runtime_for(tiny_config())
    assert mod.load_gliner(a.gliner_path, rt) is mod.load_gliner(b.gliner_path, rt)
    from tiny_graphrag.backends import loaded

    # One entry for this model at this runtime: the thresholds are not part of what is loaded
    # (another test may have loaded the same folder int8, a second entry of its own).
    keys = [
        k
        for k in loaded._MODELS
        if k[0] == "gliner"
        and k[1][0] == str(a.gliner_path.resolve())
        and k[1][1:] == (rt.device, rt.half, rt.quantize, rt.onnx)
    ]
    assert len(keys) == 1


def test_describe_is_json_and_tracks_settings(tiny_models_dir, general):
    a = make_extractor(general, tiny_config(), tiny_models_dir).describe()
    b = make_extractor(general, tiny_config(entity_threshold=0.7), tiny_models_dir).describe()
    json.dumps(a)
    assert a["gliner_model"]["fingerprint"] and a["glirel_model"]["fingerprint"]
    assert a["dtype"] == "float32"
    assert a != b and b["gliner_model"]["entity_threshold"] == 0.7


def test_no_chunks_returns_empty_list(tiny_models_dir, general):
    assert make_extractor(general, tiny_config(), tiny_models_dir).extract([]) == []


# ---- errors -------------------------------------------------------------------------------
def test_missing_model_names_path_and_fix(tmp_path, general):
    with pytest.raises(ModelNotFoundError) as err:
        make_extractor(general, tiny_config(gliner_model="gliner_mediumv2.1"), tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "gliner_mediumv2.1") in msg
    assert "tiny-graphrag models download" in msg


def test_missing_glirel_model_names_path(tiny_models_dir, tmp_path, general):
    shutil.copytree(tiny_models_dir / TINY_GLINER, tmp_path / TINY_GLINER)
    with pytest.raises(ModelNotFoundError, match="glirel") as err:
        make_extractor(general, tiny_config(), tmp_path)
    assert str(tmp_path / TINY_GLIREL) in str(err.value)


def test_corrupt_gliner_folder_raises_model_load_error(tmp_path):
    bad = tmp_path / "broken-gliner"
    bad.mkdir()
    (bad / "gliner_config.json").write_text("{not json")
    ex = make_extractor(Schema.from_dict({"entity_types": ["Person"]}), tiny_config(gliner_model=str(bad)), tmp_path)
    with pytest.raises(ModelLoadError) as err:
        ex.extract(make_chunks()[:1])
    assert str(bad) in str(err.value)


def test_corrupt_glirel_weights_raise_model_load_error(tiny_models_dir, tmp_path, general):
    shutil.copytree(tiny_models_dir / TINY_GLINER, tmp_path / TINY_GLINER)
    shutil.copytree(tiny_models_dir / TINY_GLIREL, tmp_path / TINY_GLIREL)
    (tmp_path / TINY_GLIREL / "pytorch_model.bin").write_bytes(b"\x00garbage" * 10)
    ex = make_extractor(general, tiny_config(relation_threshold=0.0), tmp_path)
    with pytest.raises(ModelLoadError) as err:
        ex.extract(make_chunks()[:1])
    assert str(tmp_path / TINY_GLIREL) in str(err.value)


def test_moved_glirel_folder_finds_its_backbone(tiny_models_dir, tmp_path, general):
    # the saved config points at the old absolute backbone path; the loader falls back to backbone/
    moved = tmp_path / "moved"
    shutil.copytree(tiny_models_dir / TINY_GLIREL, moved / TINY_GLIREL)
    shutil.copytree(tiny_models_dir / TINY_GLINER, moved / TINY_GLINER)
    cfg = json.loads((moved / TINY_GLIREL / "glirel_config.json").read_text())
    cfg["model_name"] = str(tmp_path / "gone" / "backbone")
    (moved / TINY_GLIREL / "glirel_config.json").write_text(json.dumps(cfg))
    res = make_extractor(general, tiny_config(relation_threshold=0.0), moved).extract(make_chunks()[:1])
    assert res[0].relations


@pytest.mark.parametrize("package", ["gliner", "glirel"])
def test_missing_package_gives_install_hint(tiny_models_dir, tmp_path, general, monkeypatch, package):
    # fresh copies, so that the per-process model cache cannot answer
    shutil.copytree(tiny_models_dir / TINY_GLINER, tmp_path / TINY_GLINER)
    shutil.copytree(tiny_models_dir / TINY_GLIREL, tmp_path / TINY_GLIREL)
    ex = make_extractor(general, tiny_config(), tmp_path)
    if package == "glirel":
        ex.entities(["warm up GLiNER before hiding glirel"])
    monkeypatch.setitem(sys.modules, package, None)  # makes `import package` fail
    with pytest.raises(MissingDependencyError, match=r"tiny-graphrag\[gliner\]"):
        ex.extract(make_chunks()[:1])


def test_glirel_without_its_backbone_names_it(tiny_models_dir, tmp_path, general, no_network):
    shutil.copytree(tiny_models_dir / TINY_GLINER, tmp_path / TINY_GLINER)
    shutil.copytree(tiny_models_dir / TINY_GLIREL, tmp_path / TINY_GLIREL, ignore=shutil.ignore_patterns("backbone"))
    cfg_file = tmp_path / TINY_GLIREL / "glirel_config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg["model_name"] = "acme/missing-backbone"
    cfg_file.write_text(json.dumps(cfg))
    ex = make_extractor(general, tiny_config(), tmp_path)
    with pytest.raises(ModelLoadError, match="acme/missing-backbone") as err:
        ex.extract(make_chunks()[:1])
    assert str(tmp_path / TINY_GLIREL) in str(err.value)


def test_glirel_backbone_from_the_hub_cache_without_network(
    tiny_models_dir, tmp_path, general, no_network, monkeypatch
):
    from huggingface_hub import constants

    # the Hugging Face cache layout: models--ORG--NAME/{refs/main, snapshots/COMMIT/...}
    commit = "0" * 40
    repo = tmp_path / "hub" / "models--acme--tiny-backbone"
    shutil.copytree(tiny_models_dir / TINY_GLIREL / "backbone", repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    shutil.copytree(tiny_models_dir / TINY_GLINER, tmp_path / "models" / TINY_GLINER)
    shutil.copytree(
        tiny_models_dir / TINY_GLIREL, tmp_path / "models" / TINY_GLIREL, ignore=shutil.ignore_patterns("backbone")
    )
    cfg_file = tmp_path / "models" / TINY_GLIREL / "glirel_config.json"
    cfg_file.write_text(json.dumps({**json.loads(cfg_file.read_text()), "model_name": "acme/tiny-backbone"}))
    res = make_extractor(general, tiny_config(relation_threshold=0.0), tmp_path / "models").extract(make_chunks()[:1])
    assert res[0].relations


def test_loading_leaves_the_environment_alone(tiny_models_dir, tmp_path, general, no_network, monkeypatch):
    import gliner  # noqa: F401 - imports may set variables of their own; ours is the load
    import glirel  # noqa: F401

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):  # so that setting one would show
        monkeypatch.delenv(var, raising=False)
    for name in (TINY_GLINER, TINY_GLIREL):  # fresh paths: the per-process cache cannot answer
        shutil.copytree(tiny_models_dir / name, tmp_path / name)
    before = dict(os.environ)
    res = make_extractor(general, tiny_config(relation_threshold=0.0), tmp_path).extract(make_chunks()[:1])
    assert res[0].relations and dict(os.environ) == before


def test_cuda_without_cuda_is_a_device_error(tiny_models_dir, general, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    ex = make_extractor(general, tiny_config(device="cuda"), tiny_models_dir)
    with pytest.raises(InputError, match=r"CUDA was requested .* use --device cpu"):
        ex.extract(make_chunks()[:1])


def test_unknown_extractor_name(general):
    with pytest.raises(ValueError, match="unknown extractor") as err:
        make_extractor(general, tiny_config(extractor="nope"))
    assert "['gliner', 'spacy']" in str(err.value) and "register_extractor" in str(err.value)


def test_extractor_names_lists_registered_ones_after_the_built_ins(general, monkeypatch):
    from tiny_graphrag.extract import base

    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))  # undone after the test
    assert base.extractor_names() == ["gliner", "spacy"]
    base.register_extractor("keywords", lambda schema, config, models_dir=None: ("built", config.extractor))
    assert base.extractor_names() == ["gliner", "spacy", "keywords"]
    assert make_extractor(general, tiny_config(extractor="keywords")) == ("built", "keywords")
    with pytest.raises(ValueError, match=r"\['gliner', 'spacy', 'keywords'\]"):
        make_extractor(general, tiny_config(extractor="nope"))


# ---- helpers (unit) -----------------------------------------------------------------------
def _m(text, type_, start, score=0.9):
    return EntityMention(text=text, type=type_, start=start, end=start + len(text), score=score)


def test_enforce_constraints_unit():
    schema = Schema.from_dict(
        {
            "entity_types": ["Person", "Organization", "Location"],
            "relation_types": {
                "works for": {"allowed_head": ["Person"], "allowed_tail": ["Organization"]},
                "related to": {},
            },
        }
    )
    alice, acme, paris = _m("Alice", "Person", 0), _m("Acme", "Organization", 10), _m("Paris", "Location", 20)
    alice2 = _m("alice", "Person", 30)
    rels = [
        RelationMention(alice, acme, "works for", 0.9),  # allowed
        RelationMention(acme, alice, "works for", 0.9),  # wrong direction
        RelationMention(alice, paris, "works for", 0.9),  # wrong tail type
        RelationMention(alice, paris, "born in", 0.9),  # label not in schema
        RelationMention(paris, acme, "related to", 0.9),  # unconstrained label
        RelationMention(alice, alice2, "related to", 0.9),  # same entity twice
        RelationMention(alice, alice, "related to", 0.9),  # same mention
    ]
    kept = enforce_constraints(rels, schema)
    assert kept == [rels[0], rels[4]]


def test_best_label_per_pair_unit():
    a, b = _m("Alice", "Person", 0), _m("Bob", "Person", 10)
    rels = [RelationMention(a, b, "x", 0.6), RelationMention(a, b, "y", 0.8), RelationMention(b, a, "x", 0.7)]
    assert best_label_per_pair(rels) == [rels[1], rels[2]]


def test_dedupe_mentions_unit():
    long = _m("Harvard Law School", "Organization", 0, 0.8)
    short = _m("Harvard", "Location", 0, 0.9)
    other = _m("School", "Organization", 12, 0.7)
    far = _m("Boston", "Location", 30, 0.5)
    assert dedupe_mentions([long, short, other, far, far]) == [short, other, far]
    assert dedupe_mentions([far, long]) == [long, far]


def test_token_span_maps_partial_words():
    from tiny_graphrag.extract.gliner import word_spans
    from tiny_graphrag.finetune.data import char_to_words

    text = "Obama's U.S. visit"
    words = word_spans(text)
    assert [text[s:e] for s, e in words] == ["Obama", "'", "s", "U", ".", "S", ".", "visit"]
    assert char_to_words(words, 0, 5) == (0, 0)  # Obama
    assert char_to_words(words, 8, 12) == (3, 6)  # U.S.
    assert char_to_words(words, 2, 5) == (0, 0)  # "ama", inside a word
    assert char_to_words(words, 12, 13) is None  # whitespace only


# ---- dev models ---------------------------------------------------------------------------
def _digest(path: Path) -> str:
    return hashlib.sha256((path / "pytorch_model.bin").read_bytes()).hexdigest()


def test_dev_models_are_deterministic(tiny_models_dir, tmp_path):
    from devmodels import build_tiny_gliner, build_tiny_glirel

    assert _digest(build_tiny_gliner(tmp_path / "g0", seed=0)) == _digest(tiny_models_dir / TINY_GLINER)
    assert _digest(build_tiny_gliner(tmp_path / "g1", seed=1)) != _digest(tiny_models_dir / TINY_GLINER)
    assert _digest(build_tiny_glirel(tmp_path / "r0", seed=0)) == _digest(tiny_models_dir / TINY_GLIREL)


def test_dev_models_reload_with_from_pretrained(tiny_models_dir, caplog):
    from gliner import GLiNER
    from glirel import GLiREL

    caplog.set_level(logging.WARNING)
    g = GLiNER.from_pretrained(str(tiny_models_dir / TINY_GLINER), local_files_only=True)
    assert g.inference(["Alice met Bob."], ["Person"], threshold=0.0)[0]
    r = GLiREL.from_pretrained(str(tiny_models_dir / TINY_GLIREL), local_files_only=True)
    assert r.config.fixed_relation_types is True


def test_tiny_gliner_training_path_runs_and_is_deterministic(tmp_path):
    from devmodels import build_tiny_gliner

    a = build_tiny_gliner(tmp_path / "a", seed=0, train_steps=2)
    b = build_tiny_gliner(tmp_path / "b", seed=0, train_steps=2)
    untrained = build_tiny_gliner(tmp_path / "u", seed=0)
    assert _digest(a) == _digest(b) != _digest(untrained)


def test_build_gliner_and_glirel_on_a_deberta_config(tmp_path):
    from devmodels import build_gliner, build_glirel
    from transformers import DebertaV2Config

    def config():
        return DebertaV2Config(
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            relative_attention=True,
            position_buckets=64,
            pos_att_type=["p2c", "c2p"],
            position_biased_input=False,
            type_vocab_size=0,
        )

    build_gliner(tmp_path / "g", config(), vocab_size=400)
    build_glirel(tmp_path / "r", config(), vocab_size=400, hidden_size=24)
    ex = make_extractor(
        Schema.preset("general"),
        tiny_config(gliner_model="g", glirel_model="r", entity_threshold=0.0, relation_threshold=0.0),
        tmp_path,
    )
    (res,) = ex.extract(make_chunks()[:1])
    assert res.entities and res.relations


def test_build_with_a_given_vocabulary_tokenizes_whole_words(tmp_path):
    from devmodels import SPECIAL_TOKENS, build_gliner, build_glirel, fixed_vocab, tiny_backbone_config
    from transformers import AutoTokenizer

    words = ["Ada", "Lovelace", "wrote", "notes", "on", "the", "Analytical", "Engine", "."]
    vocab = list(dict.fromkeys(SPECIAL_TOKENS + words + fixed_vocab()))
    build_gliner(tmp_path / "g", tiny_backbone_config(len(vocab)), vocab=vocab, hidden_size=32)
    build_glirel(tmp_path / "r", tiny_backbone_config(len(vocab)), vocab=vocab, hidden_size=32)
    text = "Ada Lovelace wrote notes on the Analytical Engine."
    for folder in (tmp_path / "g", tmp_path / "r" / "backbone"):
        tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        assert tok.tokenize(text) == ["Ada", "Lovelace", "wrote", "notes", "on", "the", "Analytical", "Engine", "."]
    # the default character-level vocabulary splits the same words into many pieces
    build_gliner(tmp_path / "c", tiny_backbone_config(len(fixed_vocab())), hidden_size=32)
    assert len(AutoTokenizer.from_pretrained(tmp_path / "c", local_files_only=True).tokenize(text)) > 9
    ex = make_extractor(
        Schema.preset("general"),
        tiny_config(gliner_model="g", glirel_model="r", entity_threshold=0.0, relation_threshold=0.0),
        tmp_path,
    )
    (res,) = ex.extract(make_chunks()[:1])
    assert res.entities
