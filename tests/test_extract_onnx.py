"""`runtime="onnx"`: GLiNER's and GLiREL's encoders on ONNX Runtime give PyTorch's predictions.

The real GLiNER/GLiREL classes (tiny random weights) with their encoders exported and run by
onnxruntime, against the same extractor on PyTorch: the same spans, types and relations, scores
within float rounding. Speed is a benchmark (bench/RESULTS.md), not asserted here.
"""

from __future__ import annotations

import sys

import pytest
from _tiny_models import tiny_config
from test_extract_levers import NARROW, mixed_chunks, scores, signature

from tiny_graphrag.config import ExtractionConfig
from tiny_graphrag.errors import ConfigError, MissingDependencyError
from tiny_graphrag.extract.base import make_extractor
from tiny_graphrag.extract.gliner import load_gliner, runtime_for


def make(models_dir, **cfg):
    return make_extractor(
        NARROW, tiny_config(relation_threshold=0.0, entity_threshold=0.3, batch_size=3, **cfg), models_dir
    )


def test_onnx_runtime_gives_the_torch_predictions(tiny_models_dir):
    before = sorted(p.relative_to(tiny_models_dir) for p in tiny_models_dir.rglob("*"))
    chunks = mixed_chunks()
    onnx, torch_ = make(tiny_models_dir, runtime="onnx"), make(tiny_models_dir)
    a, b = onnx.extract(chunks), torch_.extract(chunks)
    assert sum(len(r.entities) for r in b) > 0 and sum(len(r.relations) for r in b) > 0  # something to compare
    assert signature(a) == signature(b)
    assert max(abs(x - y) for x, y in zip(scores(a), scores(b))) < 1e-4
    # both models really run on ONNX Runtime, and share nothing with the torch ones
    for model in (onnx.relations._model(), load_gliner(onnx.gliner_path, runtime_for(onnx.config))):
        names = {type(m).__name__ for m in model.modules()}
        assert "OnnxEncoder" in names and not {"BertModel", "DebertaV2Model"} & names, names
    assert onnx.describe() == torch_.describe()  # same predictions, so the same extraction cache
    assert sorted(p.relative_to(tiny_models_dir) for p in tiny_models_dir.rglob("*")) == before  # nothing written there


def test_onnx_settings_are_checked(monkeypatch):
    with pytest.raises(ConfigError, match="'torch' or 'onnx'"):
        ExtractionConfig(runtime="tensorrt")
    with pytest.raises(
        ConfigError, match=r"ExtractionConfig.runtime 'onnx' and ExtractionConfig.quantize 'int8' cannot be combined"
    ):
        ExtractionConfig(runtime="onnx", quantize="int8")
    with pytest.raises(ConfigError, match="runtime='onnx' runs on the CPU only"):
        runtime_for(ExtractionConfig(runtime="onnx", device="meta"))
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` fail
    with pytest.raises(MissingDependencyError, match=r"pip install 'tiny-graphrag\[onnx\]'"):
        runtime_for(ExtractionConfig(runtime="onnx", device="cpu"))


def test_cli_runtime_flag_reaches_the_extraction_config(monkeypatch, tmp_path):
    import tiny_graphrag.indexing.pipeline as build
    from tiny_graphrag.cli.commands import main

    class Stop(Exception):
        pass

    def fake_build(inputs, out, **kw):
        raise Stop(kw["config"].extraction.runtime)

    monkeypatch.setattr(build, "build_index", fake_build)
    doc = tmp_path / "a.txt"
    doc.write_text("Barack Obama was born in Hawaii.", encoding="utf-8")
    for flags, expected in (([], "torch"), (["--runtime", "onnx"], "onnx")):
        with pytest.raises(Stop, match=expected):
            main(["build", str(doc), "--out", str(tmp_path / "g"), *flags])
