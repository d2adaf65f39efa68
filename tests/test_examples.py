"""The quickstart notebook runs headless, end to end (build + the three searches), on real models."""

from __future__ import annotations

import os
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
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path / "examples")}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "documents: 1" in outputs and "llm calls (map chunks + 1):" in outputs
    assert (tmp_path / "graphs" / "obama-sample" / "manifest.json").is_file()
