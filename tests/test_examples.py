"""The quickstart notebook runs headless, end to end (build + the three searches), on real models."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest
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


@pytest.mark.parametrize(
    ("text", "span", "expected"),
    [
        ("One here. Two there. Three.", "Two", "Two there."),
        ("Opening words of a text. Then more.", "Opening", "Opening words of a text."),  # no ". " before
        ("A last sentence without a stop", "last", "A last sentence without a stop"),
        ("x " * 150 + "mid word " + "y " * 150, "mid", None),  # too long: cut at words either side
    ],
)
def test_a_triples_sentence_is_cut_at_words(text, span, expected):
    """typed_triples.py quotes the sentence a triple came from: whole when short, cut at a word
    with "..." when longer than its reach (it had started mid-word, and dropped a text's first letter)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("typed_triples", ROOT / "examples" / "typed_triples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    start = text.index(span)
    quoted = module.sentence_around(text, start, start + len(span))
    if expected is not None:
        assert quoted == expected
        return
    assert quoted.startswith("...") and quoted.endswith("...") and "mid word" in quoted
    assert set(quoted.strip(".").split()) == {"x", "y", "mid", "word"}  # whole words only
    assert len(quoted) <= 2 * 200 + len(span) + 6
