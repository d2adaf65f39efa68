"""The three searches through the real llama.cpp backend on SmolLM2-135M-Instruct (fast, weak).

Its prose is weak, so these check structure: call counts, budgets counted by the real tokenizer,
JSON-constrained map answers parsed (or degraded to score 0), and citations that resolve.
"""

from __future__ import annotations

import dataclasses

import pytest
from test_search_fixtures import build_test_index

from tiny_graphrag.citations import parse_citations, unresolved
from tiny_graphrag.config import LLMConfig
from tiny_graphrag.search.config import GlobalConfig, SearchConfig
from tiny_graphrag.search.engine import QueryEngine

N_CTX = 2048


@pytest.fixture(scope="module")
def engine(tmp_path_factory, smollm_path):
    from tiny_graphrag.backends.embed import Embedder

    embedder = Embedder("all-MiniLM-L6-v2", device="cpu")
    index = build_test_index(tmp_path_factory.mktemp("llama") / "idx", embedder)
    config = SearchConfig(
        answer_max_tokens=48,
        global_=GlobalConfig(map_chunk_tokens=400, map_max_tokens=96, reduce_max_tokens=48, max_points=2),
    )
    llm = LLMConfig(model=str(smollm_path), n_ctx=N_CTX)
    with QueryEngine(index, llm=llm, embedder=embedder, config=config) as qe:
        yield qe


def _check(result, n_ctx: int = N_CTX):
    assert result.token_counter.endswith("tokenizer")  # the model's own, not the estimate
    assert unresolved(result.answer, result.sources) == {}
    for kind, ids in parse_citations(result.answer).items():
        for i in ids:
            assert result.sources.resolve(kind, i)
    assert result.prompt_tokens > 0
    assert result.llm_calls + result.cache_hits >= 1


@pytest.mark.parametrize("reader", ["auto", "large"])
def test_local_and_naive_with_llama_cpp(engine, reader):
    """ "auto" reads the model's size from llama.cpp: a 135M model is a small reader (evidence
    sentences, one line of answer); "large" is GraphRAG's whole-context path."""
    qe = engine.configured(dataclasses.replace(engine.config, reader=reader))
    for search in (qe.local_search, qe.naive_search):
        r = search("Where did Alan Turing study?")
        _check(r)
        assert r.details["reader"] == ("small" if reader == "auto" else "large")
        assert r.llm_calls + r.cache_hits == 1
        assert r.context_tokens <= r.details["budget"]
        assert qe.llm.count_tokens(r.context) == r.context_tokens
        assert r.prompt_tokens <= N_CTX
        if reader == "auto":
            assert "King's College" in r.context and "\n" not in r.answer.strip()


def test_global_with_llama_cpp(engine):
    large = engine.configured(dataclasses.replace(engine.config, reader="large"))
    r = large.global_search("What are the main themes of these documents?", level=0)
    _check(r)
    n_map = r.details["map_chunks"]
    reduce_calls = 1 if r.details["points_in_reduce"] else 0
    assert r.llm_calls + r.cache_hits == n_map + reduce_calls
    assert all(t <= r.details["map_chunk_tokens"] for t in r.details["map_batch_tokens"])
    assert all(0 <= p["score"] <= 100 for p in r.details["points"])


def test_stream_with_llama_cpp(engine):
    s = engine.naive_search("Who built the Eiffel Tower?", stream=True)
    pieces = list(s)
    assert pieces and s.done
    _check(s.result)


def test_change_llm_settings_before_the_model_loads(tmp_path, smollm_path):
    """The CLI's --llm/--n-ctx: the index's settings, changed, applied when the model loads."""
    from tiny_graphrag.backends.embed import Embedder

    index = build_test_index(tmp_path / "idx", Embedder("all-MiniLM-L6-v2", device="cpu"))
    with QueryEngine(index) as qe:
        qe.change_llm_settings(model=str(smollm_path), n_ctx=1024)
        assert qe.llm.name == smollm_path.name and qe.llm.n_ctx == 1024
        with pytest.raises(RuntimeError, match="already loaded"):
            qe.change_llm_settings(n_ctx=2048)
