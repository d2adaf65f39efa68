"""The default GLiNER + GLiREL path end to end through build_index, on tiny random-weight models."""

from __future__ import annotations

import pytest
from _fakes import FakeLLM
from _tiny_models import tiny_config

from tiny_graphrag import build_index, load_index
from tiny_graphrag.config import BuildConfig, ChunkingConfig
from tiny_graphrag.schema import Schema

TEXT = (
    "Barack Obama was born in Honolulu. Obama studied at Harvard Law School in Cambridge. "
    "He worked for the University of Chicago. Michelle Robinson lived in Chicago. "
) * 4
SCHEMA = Schema.from_dict(
    {
        "entity_types": ["Person", "Organization", "Location"],
        "relation_types": {
            "born in": {"allowed_head": ["Person"], "allowed_tail": ["Location"]},
            "works for": {"allowed_head": ["Person"], "allowed_tail": ["Organization"]},
            "located in": {"allowed_head": ["Organization"], "allowed_tail": ["Location"]},
            "related to": {},  # unconstrained: random weights do propose some of these
        },
    }
)


@pytest.mark.parametrize("threshold", [0.0, 1.0])
def test_gliner_glirel_build(tmp_path, tiny_models_dir, threshold):
    cfg = BuildConfig(
        chunking=ChunkingConfig(max_tokens=48, overlap_tokens=8),
        extraction=tiny_config(entity_threshold=threshold, relation_threshold=threshold),
        models_dir=str(tiny_models_dir),
    )
    result = build_index([TEXT], tmp_path / "graphs" / "g", schema=SCHEMA, config=cfg, llm=FakeLLM(), progress=False)
    store = load_index(result.path)
    graph = store.graph()
    assert store.manifest["extractor"]["extractor"] == "gliner"
    if threshold == 1.0:  # nothing scores above 1.0: an empty graph, still a complete index
        assert graph.number_of_nodes() == 0 and result.summary.warnings
        return
    assert graph.number_of_nodes() > 0
    assert {d["type"] for _, d in graph.nodes(data=True)} <= set(SCHEMA.entity_types)
    doc = store.documents()[0]
    for _, data in graph.nodes(data=True):
        for _, _, start, end in data["provenance"]:
            assert doc.text[start:end].strip()
    assert graph.number_of_edges() > 0
    for u, v, k, data in graph.edges(keys=True, data=True):
        # random weights propose any label; the schema's head/tail constraints must still hold
        assert SCHEMA.allows(k, graph.nodes[u]["type"], graph.nodes[v]["type"])
        assert data["weight"] == len(data["provenance"]) >= 1
    assert result.summary.model_calls["extraction"] == result.summary.chunks
