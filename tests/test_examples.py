"""The quickstart notebook runs headless, end to end (build + the three searches), on real models."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def test_notebook_runs_headless(tmp_path, monkeypatch, smollm_path):
    # A copy of the examples tree, so the notebook writes its index under tmp_path.
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "models").mkdir()
    os.symlink(smollm_path, tmp_path / "models" / smollm_path.name)
    monkeypatch.setenv("EXAMPLE_CHARS", "800")
    monkeypatch.setenv("EXAMPLE_LLM", smollm_path.name)  # the fast test model instead of the 0.5B one
    nb = nbformat.read(tmp_path / "examples" / "quickstart.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path / "examples")}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs)
    assert "llm calls (map chunks + 1):" in text
    # the rendered displays: build summary and index tables, linked search results, the view, the plot
    pages = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any(
        "build summary" in h and "<th style='text-align:left'>documents</th><td style='text-align:left'>1<" in h
        for h in pages
    )
    assert any("tiny-graphrag index" in h and "level C0" in h for h in pages)
    searches = [h for h in pages if "context the model saw" in h]
    assert len(searches) == 2 and "Where did Barack Obama study law?" in searches[0]
    for h in searches:  # every citation link points at a cited text in the same output
        assert set(re.findall(r"href='#([^']+)'", h)) <= set(re.findall(r"id='([^']+)'", h))
    assert any(h.startswith("<iframe srcdoc=") and "vis.Network" in h and "rendered " in h for h in pages)
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert (tmp_path / "graphs" / "obama-sample" / "manifest.json").is_file()
