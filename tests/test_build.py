"""The build pipeline: atomic publish, resume from the cache, warnings, bad input, disk full."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from _fakes import FakeLLM, KeywordExtractor

from tiny_graphrag import build_index, load_index
from tiny_graphrag.config import BuildConfig, ChunkingConfig
from tiny_graphrag.errors import InputError, TinyGraphRAGError
from tiny_graphrag.index.cache import CallCache

TEXTS = [
    "Barack Obama studied at Columbia and Harvard. Obama lived in Chicago. " * 3,
    "Michelle Obama grew up in Chicago. She met Barack Obama in Chicago. " * 3,
    "Obama was born in Honolulu, Hawaii. Hawaii is far from Chicago. " * 3,
]
SCHEMA = {"entity_types": ["Person", "Organization", "Location"], "relation_types": ["related to"]}
CFG = BuildConfig(chunking=ChunkingConfig(max_tokens=24, overlap_tokens=0))


def _build(tmp_path, embedder, name="idx", extractor=None, llm=None, config=CFG, **kw):
    return build_index(
        TEXTS,
        tmp_path / "graphs" / name,
        schema=SCHEMA,
        config=config,
        extractor=extractor or KeywordExtractor(),
        embedder=embedder,
        llm=llm or FakeLLM(cache=CallCache(tmp_path / "graphs" / ".cache" / "calls.sqlite")),
        progress=False,
        **kw,
    )


def test_build_then_identical_rebuild_makes_no_model_calls(tmp_path, embedder):
    first = _build(tmp_path, embedder)
    assert first.summary.model_calls["extraction"] > 0 and first.summary.model_calls["llm"] > 0
    store = load_index(first.path)
    assert store.manifest["counts"]["chunks"] == first.summary.chunks
    assert len(store.reports()) == first.summary.reports > 0
    ex = KeywordExtractor()
    second = _build(tmp_path, embedder, extractor=ex)
    assert ex.chunks_seen == 0 and second.summary.model_calls["extraction"] == 0
    assert second.summary.model_calls["llm"] == 0 and second.summary.model_calls["llm_cached"] > 0
    assert load_index(second.path).reports() == store.reports()


def test_interrupted_build_leaves_nothing_and_resumes(tmp_path, embedder):
    out = tmp_path / "graphs" / "idx"
    with pytest.raises(KeyboardInterrupt):
        _build(
            tmp_path,
            embedder,
            extractor=KeywordExtractor(fail_after=2),
            config=BuildConfig(chunking=ChunkingConfig(max_tokens=24, overlap_tokens=0)),
        )
    assert not out.exists()
    assert [p.name for p in (tmp_path / "graphs").iterdir() if not p.name.endswith(".cache")] == []
    result = _build(tmp_path, embedder)
    assert load_index(result.path).manifest["counts"]["chunks"] == result.summary.chunks


def test_rebuild_replaces_old_index_only_when_complete(tmp_path, embedder):
    _build(tmp_path, embedder)
    before = (tmp_path / "graphs" / "idx" / "manifest.json").read_text()
    with pytest.raises(KeyboardInterrupt):
        build_index(
            ["Totally new text about Honolulu and Harvard."] * 1,
            tmp_path / "graphs" / "idx",
            schema=SCHEMA,
            config=CFG,
            extractor=KeywordExtractor(fail_after=0),
            embedder=embedder,
            llm=FakeLLM(),
            progress=False,
        )
    assert (tmp_path / "graphs" / "idx" / "manifest.json").read_text() == before


def test_no_entities_warns_and_naive_index_still_complete(tmp_path, embedder):
    result = build_index(
        ["nothing capitalized here. just words."],
        tmp_path / "graphs" / "empty",
        schema=SCHEMA,
        config=CFG,
        extractor=KeywordExtractor(),
        embedder=embedder,
        llm=FakeLLM(),
        progress=False,
    )
    assert any("no entities" in w for w in result.summary.warnings)
    store = load_index(result.path)
    assert store.graph().number_of_nodes() == 0 and store.communities() == []
    ids, mat = store.vectors("chunks")
    assert len(ids) == mat.shape[0] == result.summary.chunks


def test_disk_full_gives_clear_error_and_publishes_nothing(tmp_path, embedder, monkeypatch):
    from tiny_graphrag.index import store as store_mod

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_mod.IndexStore, "save_graph", full)
    with pytest.raises(TinyGraphRAGError, match="disk is full"):
        _build(tmp_path, embedder)
    assert not (tmp_path / "graphs" / "idx").exists()


def test_bad_inputs(tmp_path, embedder):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(InputError, match="empty"):
        build_index(
            [empty],
            tmp_path / "graphs" / "x",
            schema=SCHEMA,
            extractor=KeywordExtractor(),
            embedder=embedder,
            progress=False,
        )
    with pytest.raises(TinyGraphRAGError, match="either schema"):
        build_index(TEXTS, tmp_path / "g", schema="general", entity_types=["Person"], progress=False)
    assert not (tmp_path / "graphs" / "x").exists()


def test_manifest_records_models_schema_and_settings(tmp_path, embedder):
    result = _build(tmp_path, embedder)
    m = json.loads((Path(result.path) / "manifest.json").read_text())
    assert (
        m["format_version"] == 2 and m["schema"]
    )  # 2 since issue 14 (content-derived ids)["entity_types"] == SCHEMA["entity_types"]
    assert m["config"]["chunking"] == {"max_tokens": 24, "overlap_tokens": 0}
    assert m["extractor"]["name"] == "keyword-fake" and m["embedder"]["fingerprint"]
    assert {"graph.pkl", "index.sqlite", "vectors/chunks.npy"} <= set(m["files"])


def test_fallback_reports_are_counted_in_summary_and_info(tmp_path, embedder):
    from tiny_graphrag.outputs.info import index_info

    garbage = FakeLLM(
        lambda messages, schema, max_tokens: "not json at all",
        name="garbage",
        cache=CallCache(tmp_path / "graphs" / ".cache" / "calls.sqlite"),
    )
    result = _build(tmp_path, embedder, name="fb", llm=garbage)
    assert result.summary.reports > 0 and result.summary.fallback_reports == result.summary.reports
    assert "fallback" in result.summary.format()
    info = index_info(result.path)
    assert info["fallback_reports"] == result.summary.reports
    good = _build(tmp_path, embedder, name="ok")
    assert good.summary.fallback_reports == 0 and index_info(good.path)["fallback_reports"] == 0


def test_report_min_size_skips_small_communities(tmp_path, embedder):
    from dataclasses import replace

    from tiny_graphrag.config import LLMConfig

    every = _build(tmp_path, embedder, name="all")
    index = load_index(every.path)
    sizes = {c.id: len(c.nodes) for c in index.communities()}
    assert min(sizes.values()) < 3 <= max(sizes.values())  # the fixture has both kinds
    big = _build(tmp_path, embedder, name="big", config=replace(CFG, llm=LLMConfig(report_min_size=3)))
    reported = {r.community_id for r in load_index(big.path).reports()}
    assert reported == {cid for cid, n in sizes.items() if n >= 3}
    assert big.summary.reports == len(reported) < every.summary.reports
