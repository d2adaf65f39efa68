"""Smoke test of the benchmarks: `python -m bench --quick` runs every section and writes the JSON.

No timing is asserted (speed numbers depend on the machine); only that every section ran and
reported its ratios and metrics. Uses tiny random-weight GLiNER/GLiREL models, the real
all-MiniLM-L6-v2, spaCy en_core_web_sm and Gemma 3 270M, all offline (a few minutes on 2 cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory) -> dict:
    if not (DATA / "corpora" / "barack_obama.txt").is_file():
        pytest.fail(
            f"benchmark data not found at {DATA}: the benchmarks read shared/data next to the repository "
            "(CI lays it there); run them from a checkout that has it"
        )
    out = tmp_path_factory.mktemp("bench") / "results.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,  # the quick bench takes minutes; an hour is far from it even on a busy machine
    )
    assert out.is_file(), f"no JSON written; exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    data = json.loads(out.read_text(encoding="utf-8"))
    data["_proc"] = {"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr[-5000:]}
    return data


def test_every_section_ran(quick_results):
    sections = quick_results["sections"]
    errors = {k: v["error"] for k, v in sections.items() if isinstance(v, dict) and "error" in v}
    assert not errors, errors
    assert set(sections) == {
        "extraction",
        "embedding",
        "llm",
        "build_scaling",
        "global_calls",
        "local_latency",
        "quality_retrieval",
        "quality_extraction",
        "chunk_context",
        "documents",
    }
    assert quick_results["_proc"]["returncode"] == 0, quick_results["_proc"]["stderr"]


def test_metadata(quick_results):
    assert quick_results["mode"] == "quick"
    assert quick_results["command"].startswith("python -m bench")
    assert "cpu_count" in quick_results["machine"]
    assert "commit" in quick_results["git"]


def test_ratios_are_reported(quick_results):
    s = quick_results["sections"]
    ext = s["extraction"]
    assert ext["speedup_tokens_per_s"] > 0
    assert ext["ours"]["tokens_per_s"] > 0 and ext["seed"]["tokens_per_s"] > 0
    assert ext["seed"]["path"] in ("spacy-wrappers", "emulated")
    assert ext["ours"]["entities"] > 0  # the calibrated threshold leaves work for GLiREL
    # the output-preserving paths give the plain path's extractions
    for name in ("levers", "onnx"):
        agree = ext[name]["agreement_with_ours"]
        assert agree["entity_agreement_f1"] == agree["relation_agreement_f1"] == 1.0, (name, agree)
    assert s["embedding"]["speedup"] > 0 and s["embedding"]["speedup_vs_seed_chunking"] > 0
    assert s["llm"]["raw"]["prompt_tokens_per_s"] > 0
    g = s["global_calls"]
    assert g["calls_ratio_seed_over_ours"] > 0 and g["prompt_tokens_ratio_seed_over_ours"] > 0
    assert g["dynamic"]["map_calls_mean"] <= g["dynamic"]["map_calls_without_mean"]


def test_scaling_and_latency(quick_results):
    s = quick_results["sections"]
    sizes = s["build_scaling"]["sizes"]
    assert len(sizes) >= 3
    assert [r["tokens"] for r in sizes] == sorted(r["tokens"] for r in sizes)
    for r in sizes:
        assert r["peak_rss_mb"] > 0 and set(r["seconds_per_stage"]) >= {"extract", "embed", "communities"}
    for key in ("obama", "synthetic"):
        lat = s["local_latency"][key]["total_ms"]
        assert 0 < lat["p50"] <= lat["p95"]


def test_quality_numbers_recompute_from_json(quick_results):
    s = quick_results["sections"]
    r = s["quality_retrieval"]
    for mode in ("dense", "bm25", "hybrid", "local"):
        for k in (2, 5, 10):
            vals = [len(set(q[mode][:k]) & set(q["gold"])) / len(q["gold"]) for q in r["per_question"]]
            assert r["results"][mode][f"recall@{k}"] == pytest.approx(100 * sum(vals) / len(vals), abs=0.051)
    spacy = s["quality_extraction"]["extractors"]["spacy:en_core_web_sm"]
    tp = sum(d["mentions"][0] for d in spacy["per_document"])
    pred = sum(d["mentions"][1] for d in spacy["per_document"])
    gold = sum(d["mentions"][2] for d in spacy["per_document"])
    p, rec = tp / pred, tp / gold
    assert spacy["entity"]["f1"] == pytest.approx(100 * 2 * p * rec / (p + rec), abs=0.051)


def test_report_check_recomputes_and_catches_a_changed_number(quick_results, tmp_path, capsys):
    from bench.report import main as report_main

    data = {k: v for k, v in quick_results.items() if k != "_proc"}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert report_main(["--check", str(path)]) == 0
    data["sections"]["quality_retrieval"]["results"]["local"]["recall@5"] += 1.0
    data["sections"]["quality_extraction"]["extractors"]["spacy:en_core_web_sm"]["entity"]["f1"] += 1.0
    path.write_text(json.dumps(data), encoding="utf-8")
    assert report_main(["--check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "quality_retrieval local recall@5" in out and "spacy:en_core_web_sm entity F1" in out


def test_chunk_context_counts(quick_results):
    r = quick_results["sections"]["chunk_context"]
    visible = r["triples_visible_in_one_chunk"]
    assert r["gold_triples"] > 0
    assert all(0 <= v <= r["gold_triples"] for v in visible.values())
    # a larger chunk can only make more triples visible (bounded by the document)
    sizes = [visible[f"sentences-{n}-tokens"] for n in (64, 128, 256, 384)]
    assert sizes == sorted(sizes)


def test_the_gpu_bench_runs_its_tiny_form_on_the_cpu(tmp_path):
    """`python -m bench.gpu` is the first command of a session that is lent a GPU, whose device time
    is short: its tiny form on the CPU checks here that it still runs and writes every section."""
    out = tmp_path / "gpu.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "bench.gpu", "--tiny", "--device", "cpu", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,  # ~20 s on 2 idle cores
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    ext, emb = data["extraction"], data["embedding"]
    assert ext["by_batch_size"] and ext["best_batch_size"] in {int(b) for b in ext["by_batch_size"]}
    assert ext["speedup_best_vs_seed"] > 0 and emb["batch_64"] and emb["batch_256"]
    assert all("section_seconds" in data[s] for s in ("extraction", "embedding", "llm"))  # each section ran
