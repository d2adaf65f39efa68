"""A RAPTOR tree end to end on real models: the CLI builds an Obama excerpt with SmolLM2-135M
summaries (spaCy extraction, MiniLM embeddings), `info` shows the layers, `query tree` answers
with sources in the article, and a rebuild replays every summary from the call cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiny_graphrag.citations import unresolved
from tiny_graphrag.cli.commands import main
from tiny_graphrag.config import LLMConfig
from tiny_graphrag.search.config import SearchConfig
from tiny_graphrag.search.engine import QueryEngine

OBAMA = Path("../shared/data/corpora/barack_obama.txt")


@pytest.fixture(scope="module")
def built(tmp_path_factory, smollm_path):
    work = tmp_path_factory.mktemp("tree")
    doc = work / "obama.txt"
    doc.write_text(OBAMA.read_text(encoding="utf-8")[:7000], encoding="utf-8")
    args = [
        str(doc),
        "--out",
        str(work / "graphs" / "obama"),
        "--extractor",
        "spacy",
        "--llm",
        str(smollm_path),
        "--no-reports",
        "--tree",
        "--max-tokens",
        "64",
        "--overlap",
        "0",
        "--json",
    ]
    return work, doc, args


def _build(args, capsys) -> dict:
    assert main(["build", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_build_info_query_and_rebuild_from_cache(built, capsys, smollm_path):
    work, doc, args = built
    first = _build(args, capsys)
    assert first["model_calls"]["tree_llm"] >= 1
    out = work / "graphs" / "obama"
    assert main(["info", str(out)]) == 0
    info = capsys.readouterr().out
    assert "tree: nodes per layer L0=" in info and "L1=" in info

    with QueryEngine(out, llm=LLMConfig(model=str(smollm_path))) as qe:
        tree = qe.store.tree()
        assert tree and all(n.text.strip() and n.tokens > 0 for n in tree)
        res = qe.tree_search("Where was Obama born?")
        assert res.mode == "tree" and res.usage["answer"].llm_calls + res.usage["answer"].cache_hits == 1
        assert unresolved(res.answer, res.sources) == {}
        text = doc.read_text(encoding="utf-8")
        assert res.sources.chunks and all(text[c.start : c.end] == c.text for c in res.sources.chunks)
        assert res.details["reader"] == "small" and res.details["evidence"]  # the reached chunks' best sentences
        large = qe.configured(SearchConfig(reader="large")).tree_search("Where was Obama born?", only_context=True)
        covered = {s for ids in large.details["summaries"].values() for s in ids}
        assert covered and covered <= {c.id for c in large.sources.chunks}  # every summary resolves to chunks shown
        before = [(n.id, n.children, n.text) for n in tree]

    assert main(["query", "tree", "Where was Obama born?", "--index", str(out), "--strategy", "traversal"]) == 0
    assert capsys.readouterr().out.strip()

    second = _build(args, capsys)  # identical rebuild: the same tree, no model call
    assert (
        second["model_calls"]["tree_llm"] == 0
        and second["model_calls"]["tree_llm_cached"] >= first["model_calls"]["tree_llm"]
    )
    with QueryEngine(out, llm=LLMConfig(model=str(smollm_path))) as qe:
        assert [(n.id, n.children, n.text) for n in qe.store.tree()] == before
