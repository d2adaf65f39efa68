"""A build's progress: one bar per stage that has one, and no third-party bars nested inside them."""

from __future__ import annotations

from _fakes import FakeLLM, KeywordExtractor

from tiny_graphrag import build_index
from tiny_graphrag.backends.embed import Embedder
from tiny_graphrag.config import BuildConfig, ChunkingConfig


def test_build_shows_its_stage_bars_and_no_batches_bars(tmp_path, capfd):
    texts = ["Barack Obama studied at Columbia and Harvard. Obama lived in Chicago. " * 4]
    build_index(
        texts,
        tmp_path / "idx",
        schema={"entity_types": ["Person", "Organization", "Location"], "relation_types": ["related to"]},
        config=BuildConfig(chunking=ChunkingConfig(max_tokens=24, overlap_tokens=0)),
        extractor=KeywordExtractor(),
        embedder=Embedder(),
        llm=FakeLLM(),
        progress=True,
    )
    err = capfd.readouterr().err
    assert "extracting (keyword-fake)" in err and "community reports" in err  # the build's own bars
    assert "Batches" not in err  # sentence-transformers' bars (chunk and entity embeddings)
