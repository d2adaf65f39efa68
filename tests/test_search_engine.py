"""The three searches end to end on a small hand-made index, with the real embedder and a FakeLLM."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil

import pytest
from _fakes import LARGE, FakeLLM
from test_search_fixtures import build_test_index, points_json

from tiny_graphrag.citations import parse_citations, unresolved
from tiny_graphrag.config import LLMConfig
from tiny_graphrag.errors import ConfigError, IndexFormatError, InputError, ModelNotFoundError, TinyGraphRAGError
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.search.config import GlobalConfig, LocalConfig, SearchConfig
from tiny_graphrag.search.engine import QueryEngine
from tiny_graphrag.search.global_search import INVALID_MAP_ANSWER
from tiny_graphrag.search.prompts import NO_DATA_ANSWER
from tiny_graphrag.search.result import SearchResult, StreamingResult, Usage


@pytest.fixture(scope="module")
def index(tmp_path_factory, embedder):
    return build_test_index(tmp_path_factory.mktemp("search") / "idx", embedder)


def _first_ids(messages, table: str) -> list[int]:
    """The ids in the first column of a context table, as a model would read them."""
    text = messages[-1]["content"]
    m = re.search(r"-----" + table + r"-----\n[^\n]*\n((?:[^\n-][^\n]*\n?)*)", text)
    if not m:
        return []
    return [int(line.split("|", 1)[0]) for line in m.group(1).splitlines() if line.split("|", 1)[0].isdigit()]


def _reports_shown(messages) -> list[int]:
    """The report ids of a map batch's findings ("<report id>.<n>" in the Findings table)."""
    return list(dict.fromkeys(int(fid.split(".")[0]) for fid in _finding_ids(messages)))


def _finding_ids(messages) -> list[str]:
    text = messages[-1]["content"]
    m = re.search(r"-----Findings-----\n[^\n]*\n((?:[^\n-][^\n]*\n?)*)", text)
    return [line.split("|", 1)[0] for line in m.group(1).splitlines()] if m else []


def citing_responder(messages, schema, max_tokens):
    """Answers cite the first source and report shown, plus an id that was never shown (999)."""
    if schema is not None:  # map step: the batch's first finding helps, its last does not
        ids = schema["properties"]["points"]["items"]["properties"]["finding"]["enum"]
        assert ids == _finding_ids(messages)  # the schema names exactly the findings shown
        return json.dumps(
            {"points": [{"finding": ids[0], "score": 60}] + [{"finding": i, "score": 0} for i in ids[1:2]]}
        )
    text = messages[-1]["content"]
    if "Analyst point" in text:
        rids = [int(x) for x in re.findall(r"Reports \((\d+)", text)] or [999]  # only uncited points kept
        return f"Combined answer [Data: Reports ({rids[0]}, 999)]."
    sids = _first_ids(messages, "Sources")
    return f"Answer from the data [Data: Sources ({sids[0]}, 999)]."


@pytest.fixture()
def engine(index, embedder):
    qe = QueryEngine(index, llm=FakeLLM(n_params=LARGE, respond=citing_responder, n_ctx=4096), embedder=embedder)
    yield qe
    qe.close()


def _assert_citations_resolve(result: SearchResult, store: IndexStore):
    assert unresolved(result.answer, result.sources) == {}
    cited = parse_citations(result.answer)
    assert any(cited.values()), result.answer
    for sid in cited["sources"]:
        src = next(c for c in result.sources.chunks if c.id == sid)
        # The cited chunk is a real span of its document.
        assert store.document(src.doc_id).text[src.start : src.end] == src.text
        assert src.text in result.context or result.mode == "global"
    for rid in cited["reports"]:
        assert result.sources.resolve("reports", rid)


# ---- the three searches -------------------------------------------------------------------
def test_naive_search_end_to_end(engine):
    r = engine.naive_search("Where is Bletchley Park located?")
    assert isinstance(r, SearchResult) and str(r) == r.answer
    assert r.llm_calls == 1 and r.prompt_tokens > 0 and r.completion_tokens > 0
    assert "Milton Keynes" in r.context
    assert r.invalid_citations == {"sources": (999,)}  # the id never shown was removed
    assert "999" not in r.answer
    _assert_citations_resolve(r, engine.store)
    assert r.context_tokens <= r.details["budget"]
    assert set(r.seconds) >= {"embed_query", "retrieve", "context", "answer", "total"}
    json.dumps(r.to_dict())  # --json works


GRAPHRAG_LOCAL = LocalConfig(community_share=0.15, entity_table=True)  # GraphRAG's local context


def test_local_search_end_to_end(engine):
    r = engine.local_search("Who worked with Charles Babbage?", config=GRAPHRAG_LOCAL)
    linked = {e["key"]: e for e in r.details["linked_entities"]}
    assert linked["charles babbage"]["how"] == "exact"
    assert "Ada Lovelace" in r.context  # a neighbour of the linked entity
    assert "-----Entities-----" in r.context and "-----Relationships-----" in r.context
    assert "-----Reports-----" in r.context and "-----Sources-----" in r.context
    assert r.llm_calls == 1
    _assert_citations_resolve(r, engine.store)
    # Ids quoted inside the shown reports resolve too.
    for rep in r.sources.reports:
        assert unresolved(rep.text, r.sources) == {}
    assert r.context_tokens <= r.details["budget"]


def test_the_default_local_context_is_text_and_relationships(engine):
    """A small reader answered better from text alone than with reports and the entity table."""
    r = engine.local_search("Who worked with Charles Babbage?")
    assert "-----Sources-----" in r.context and "-----Relationships-----" in r.context
    assert "-----Reports-----" not in r.context and "-----Entities-----" not in r.context
    assert not r.sources.entities and r.context_tokens <= r.details["budget"]
    with_tables = engine.local_search("Who worked with Charles Babbage?", config=GRAPHRAG_LOCAL, only_context=True)
    assert len(r.sources.chunks) >= len(with_tables.sources.chunks)  # their room went to text


def test_local_search_follows_the_graph_across_hops(engine):
    # Joan Clarke's document does not mention King's College; the graph links her to Turing.
    r = engine.local_search("Joan Clarke", only_context=True)
    assert "King's College" in r.context


def test_a_readers_walk_through_local_search_is_short_and_mostly_forward(engine):
    """Issue 29: the library calls within two of local_search make at most 12 stays in a file and
    come back to a file already left at most 3 times (scripts/walk.py)."""
    from scripts.walk import stays, walk

    engine.local_search("Where did Alan Turing study?", only_context=True)  # models loaded outside the walk
    calls = walk(engine, "Where did Alan Turing study?", 2)
    out, returns = stays(calls)
    assert calls[0] == ("search/engine.py", "local_search") and ("search/local_retriever.py", "retrieve") in calls
    assert len(out) <= 12 and returns <= 3, out


def test_global_search_calls_are_map_chunks_plus_one(index, embedder):
    # small chunks and a selection that keeps every report of level 1: several map calls; the
    # points in the reduce are exactly the ones the model scored above 0 (GraphRAG's rule)
    cfg = SearchConfig(
        global_=GlobalConfig(
            map_chunk_tokens=120, dynamic_map_calls=50, dynamic_share=1.0, dynamic_cutoff=0.0, min_similarity=-1.0
        )
    )
    llm = FakeLLM(n_params=LARGE, respond=citing_responder, n_ctx=4096)
    with QueryEngine(index, llm=llm, embedder=embedder, config=cfg) as qe:
        r = qe.global_search("What are the main themes?", level=1)
        n_chunks = r.details["map_chunks"]
        assert n_chunks > 1
        assert r.llm_calls == n_chunks + 1 == llm.calls
        assert r.details["level"] == 1 and r.details["reports_mapped"] == 5
        assert all(t <= r.details["map_chunk_tokens"] for t in r.details["map_batch_tokens"])
        assert r.invalid_citations == {"reports": (999,)}
        _assert_citations_resolve(r, qe.store)
        assert r.details["points_in_reduce"] == n_chunks  # score-0 fillers were dropped


def _report_id(qe, title_start: str, level: int) -> int:
    return next(rid for rid, r in qe.index.globals.at_level(level) if r.title.startswith(title_start))


def test_the_reduce_may_say_the_context_does_not_say(index, embedder):
    """As GraphRAG's reduce prompt does, the reduce is offered "The context does not say"."""
    ids: dict[str, int] = {}
    prompts: list[str] = []

    def responder(messages, schema, max_tokens):
        if schema is not None:
            shown = _reports_shown(messages)
            pairs = [("Turing studied at King's College, Cambridge", 90)] if ids["turing"] in shown else []
            return points_json(*(pairs or [("nothing here", 0)]))
        prompts.append(messages[-1]["content"])
        return "Cambridge."

    with QueryEngine(index, llm=FakeLLM(n_params=LARGE, respond=responder, n_ctx=4096), embedder=embedder) as qe:
        ids.update(turing=_report_id(qe, "Turing", 0))
        r = qe.global_search("Where did Alan Turing study?", level=0)
    assert "Turing studied" in r.details["reduce_context"]
    assert len(prompts) == 1 and "does not say" in prompts[0]


def test_global_only_context_makes_no_call(index, embedder):
    llm = FakeLLM(n_params=LARGE, respond=citing_responder, n_ctx=4096)
    with QueryEngine(index, llm=llm, embedder=embedder) as qe:
        r = qe.global_search("Where did Alan Turing study?", level=1, only_context=True)
        assert r.details["level"] == 1 and 0 < r.details["reports_mapped"] <= r.details["reports_at_level"]
        assert llm.calls == 0 and r.llm_calls == 0
        assert 0 < r.details["reduce_budget"] <= 4096  # what the reduce call could hold, known without calling


def test_global_invalid_map_json_degrades_to_score_zero(index, embedder):
    """Nothing helpful, so no reduce call."""

    def broken(messages, schema, max_tokens):
        if schema is not None:
            return "this is {not json"
        return "Cambridge."

    with QueryEngine(index, llm=FakeLLM(n_params=LARGE, respond=broken), embedder=embedder) as qe:
        r = qe.global_search("Where did Alan Turing study?", level=0)
    assert r.details["invalid_map_answers"] == r.details["map_chunks"] > 0
    assert all(p["score"] == 0 and p["description"] == INVALID_MAP_ANSWER for p in r.details["points"])
    assert r.answer == NO_DATA_ANSWER  # nothing helpful: said so, no reduce call
    assert r.llm_calls == r.details["map_chunks"]


# ---- only_context, streaming ----------------------------------------------------------------
@pytest.mark.parametrize("mode", ["local", "global", "naive"])
def test_only_context_never_loads_or_calls_a_model(index, embedder, mode):
    # The configured model does not exist: any attempt to load it would raise.
    with QueryEngine(index, llm=LLMConfig(model="missing.gguf"), embedder=embedder) as qe:
        r = getattr(qe, f"{mode}_search")("Where did Alan Turing study?", only_context=True)
        assert not qe.llm_loaded
        assert r.answer == "" and r.llm_calls == 0 and r.context
        assert any("approximate" in n for n in r.notes)
        with pytest.raises(ModelNotFoundError):
            getattr(qe, f"{mode}_search")("Where did Alan Turing study?")


@pytest.mark.parametrize("mode", ["local", "global", "naive"])
def test_streaming(engine, mode):
    kwargs = {"level": 0} if mode == "global" else {}
    s = getattr(engine, f"{mode}_search")("Where did Alan Turing study?", stream=True, **kwargs)
    assert isinstance(s, StreamingResult)
    assert s.context and s.sources  # known before the answer
    assert not s.done
    pieces = list(s)
    assert len(pieces) > 1 and s.done
    assert "".join(pieces).strip().startswith(s.answer[:10])
    assert "999" not in s.answer  # checked once complete
    assert s.result.llm_calls >= 1
    assert unresolved(s.answer, s.result.sources) == {}


# ---- fallbacks and bad input ----------------------------------------------------------------
def test_local_without_links_falls_back_to_text(engine):
    r = engine.local_search("How do green plants turn light into chemical energy?")
    assert r.details["linked_entities"] == []
    assert any("no entity" in n for n in r.notes)
    assert "Photosynthesis" in r.context
    assert "-----Entities-----" not in r.context


def test_nothing_relevant_says_so(engine):
    r = engine.naive_search("xqzv wplk")
    assert r.answer == NO_DATA_ANSWER and r.llm_calls == 0


@pytest.mark.parametrize("query", ["", "   ", "\n"])
@pytest.mark.parametrize("mode", ["local", "global", "naive"])
def test_empty_query_is_an_error(engine, mode, query):
    with pytest.raises(InputError, match="empty"):
        getattr(engine, f"{mode}_search")(query)


@pytest.mark.parametrize("mode", ["local", "global", "naive"])
def test_query_longer_than_the_window_is_an_error(index, embedder, mode):
    with QueryEngine(index, llm=FakeLLM(n_params=LARGE, respond=citing_responder, n_ctx=2500), embedder=embedder) as qe:
        getattr(qe, f"{mode}_search")("why " * 4)  # a short query fits
        with pytest.raises(InputError, match="the query is too long.*shorten the query"):
            getattr(qe, f"{mode}_search")("why " * 2500)
    with QueryEngine(index, llm=FakeLLM(n_params=LARGE, respond=citing_responder, n_ctx=512), embedder=embedder) as qe:
        if mode == "global":  # the map prompt alone does not fit 512 tokens
            with pytest.raises(InputError, match="n_ctx=512 is too small for any query"):
                qe.global_search("why " * 4)


@pytest.mark.parametrize("mode", ["local", "global", "naive"])
def test_a_budget_the_window_cannot_hold_is_cut_with_a_note(index, embedder, mode):
    """A context budget larger than n_ctx leaves is scaled down, and the result says so."""
    config = SearchConfig(context_tokens=3000, global_=GlobalConfig(map_chunk_tokens=3000))
    with QueryEngine(
        index, llm=FakeLLM(n_params=LARGE, respond=citing_responder, n_ctx=1024), embedder=embedder, config=config
    ) as qe:
        r = getattr(qe, f"{mode}_search")("Who worked with Charles Babbage?")
        cut = [n for n in r.notes if "was cut to" in n]
        assert cut and "below the 3000 configured" in cut[0] and "n_ctx=1024" in cut[0] and "--n-ctx" in cut[0]
        room = int(cut[0].split("was cut to ")[1].split()[0])
        assert room < 1024 - 200  # the window less the prompt and the output (200 map tokens, 500 answer tokens)
        budget = r.details["map_chunk_tokens"] if mode == "global" else r.details["budget"]
        assert budget == room
    # A budget that fits is taken as configured, without a note.
    config = SearchConfig(context_tokens=200, global_=GlobalConfig(map_chunk_tokens=200))
    with QueryEngine(
        index, llm=FakeLLM(n_params=LARGE, respond=citing_responder, n_ctx=4096), embedder=embedder, config=config
    ) as qe:
        r = getattr(qe, f"{mode}_search")("Who worked with Charles Babbage?")
        assert not [n for n in r.notes if "was cut to" in n]
        assert (r.details["map_chunk_tokens"] if mode == "global" else r.details["budget"]) == 200


def test_level_that_does_not_exist(engine):
    with pytest.raises(InputError, match=r"level 7 does not exist.*\[0, 1\]"):
        engine.global_search("themes?", level=7)


def test_level_and_config_of_the_wrong_type_name_the_type(engine, index, embedder):
    with pytest.raises(InputError, match=r"level must be an int .*got '1'"):  # was: level '1' does not exist, [0, 1]
        engine.global_search("themes?", level="1")
    with pytest.raises(ConfigError, match=r"config must be a SearchConfig .*got the str 'fast'"):  # was AttributeError
        QueryEngine(index, llm=FakeLLM(n_params=LARGE), embedder=embedder, config="fast")


def test_evaluate_checks_that_global_search_can_run_before_writing_questions(tmp_path, embedder):
    from tiny_graphrag.evaluation.head_to_head import evaluate

    path = build_test_index(tmp_path / "noreports", embedder, with_reports=False)
    judge = FakeLLM(n_params=LARGE, respond=lambda *a: pytest.fail("a question was asked for"))
    with QueryEngine(path, llm=FakeLLM(n_params=LARGE), embedder=embedder) as qe:
        with pytest.raises(InputError, match="no community reports, which global search needs"):
            evaluate(qe, judge, questions=2, a="global", b="naive")


def test_missing_incomplete_and_incompatible_indexes(tmp_path, index, embedder):
    with pytest.raises(IndexFormatError, match="no index"):
        QueryEngine(tmp_path / "nope", llm=FakeLLM(n_params=LARGE), embedder=embedder)
    partial = tmp_path / "partial"
    shutil.copytree(index, partial)
    (partial / "manifest.json").unlink()
    with pytest.raises(IndexFormatError, match="not a complete index"):
        QueryEngine(partial, llm=FakeLLM(n_params=LARGE), embedder=embedder)
    old = tmp_path / "old"
    shutil.copytree(index, old)
    manifest = json.loads((old / "manifest.json").read_text())
    manifest["format_version"] = 0
    (old / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="format version"):
        QueryEngine(old, llm=FakeLLM(n_params=LARGE), embedder=embedder)


def test_global_search_without_reports(tmp_path, embedder):
    path = build_test_index(tmp_path / "noreports", embedder, with_reports=False)
    with QueryEngine(path, llm=FakeLLM(n_params=LARGE, respond=citing_responder), embedder=embedder) as qe:
        with pytest.raises(InputError, match="no community reports"):
            qe.global_search("themes?")
        r = qe.local_search("Who is Grace Hopper?")  # local still works without reports
        assert "-----Reports-----" not in r.context and r.answer


def test_index_without_reports_needs_no_llm_for_contexts(tmp_path, embedder):
    path = build_test_index(tmp_path / "noreports", embedder, with_reports=False)
    with QueryEngine(path, llm=LLMConfig(model="missing.gguf"), embedder=embedder) as qe:
        for mode in ("local", "naive"):
            r = getattr(qe, f"{mode}_search")("Who is Grace Hopper?", only_context=True)
            assert "Grace Hopper" in r.context and r.llm_calls == 0
        for only_context in (True, False):  # an error naming the build option, before any model is looked for
            with pytest.raises(TinyGraphRAGError, match=r"no community reports.*--no-reports"):
                qe.global_search("What are the main themes?", only_context=only_context)
        assert not qe.llm_loaded


# ---- usage per category ---------------------------------------------------------------------------
OLD_KEYS = {
    "mode",
    "query",
    "answer",
    "context",
    "sources",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "context_tokens",
    "token_counter",
    "seconds",
    "notes",
    "details",
    "invalid_citations",
    "cache_hits",
    "documents",
}


def _totals(r) -> Usage:
    return Usage(r.llm_calls, r.prompt_tokens, r.completion_tokens, r.cache_hits)


def test_usage_per_category(index, embedder):
    cfg = SearchConfig(
        global_=GlobalConfig(
            map_chunk_tokens=120, dynamic_map_calls=50, dynamic_share=1.0, dynamic_cutoff=0.0, min_similarity=-1.0
        )
    )
    llm = FakeLLM(n_params=LARGE, respond=citing_responder, n_ctx=4096)
    with QueryEngine(index, llm=llm, embedder=embedder, config=cfg) as qe:
        g = qe.global_search("What are the main themes?", level=1)
        assert set(g.usage) == {"map", "reduce"}
        assert g.usage["map"].llm_calls == g.details["map_chunks"] > 1 and g.usage["reduce"].llm_calls == 1
        reduce_request, map_requests = llm.requests[-1], llm.requests[:-1]
        assert g.usage["reduce"].prompt_tokens == sum(
            llm.count_tokens(m["content"]) for m in reduce_request["messages"]
        )
        assert g.usage["map"].prompt_tokens == sum(
            llm.count_tokens(m["content"]) for req in map_requests for m in req["messages"]
        )
        local = qe.local_search("Who worked with Charles Babbage?")
        assert set(local.usage) == {"answer"} and local.usage["answer"] == _totals(local)
        again = qe.local_search("Who worked with Charles Babbage?")  # the same call: from the cache
        assert again.usage["answer"] == Usage(0, local.prompt_tokens, local.completion_tokens, 1)
        assert again.answer == local.answer
        assert qe.naive_search("Where did Alan Turing study?", only_context=True).usage == {}
    for r in (g, local, again):
        total = Usage(*(sum(getattr(u, f) for u in r.usage.values()) for f in Usage.__dataclass_fields__))
        assert _totals(r) == total
        d = json.loads(json.dumps(r.to_dict()))
        assert set(d) == OLD_KEYS | {"usage"}
        assert d["usage"] == {k: dataclasses.asdict(u) for k, u in r.usage.items()}
        totals = (d["llm_calls"], d["prompt_tokens"], d["completion_tokens"], d["cache_hits"])
        assert totals == dataclasses.astuple(total)


def test_streamed_usage_and_seconds(engine):
    s = engine.global_search("Where did Alan Turing study?", stream=True, level=0)
    assert "answer" not in s.seconds and "total" not in s.seconds  # not known before the answer
    list(s)
    assert {"context", "map", "reduce_context", "answer", "total"} <= set(s.result.seconds)
    assert s.result.usage["reduce"].llm_calls == 1
    assert s.result.usage["reduce"].completion_tokens == len(s.partial_answer.split())


# ---- answers the model leaves uncited -----------------------------------------------------------
@pytest.mark.parametrize(
    "said", ["The context does not say.", "Milton Keynes", "Atlantis", "It is a long sentence about a park."]
)
def test_no_citation_is_made_up(index, embedder, said):
    with QueryEngine(
        index, llm=FakeLLM(n_params=LARGE, respond=lambda m, s, n: said, n_ctx=4096), embedder=embedder
    ) as qe:
        r = qe.naive_search("Where is Bletchley Park located?")
    assert r.answer == said and not any(parse_citations(r.answer).values())


@pytest.mark.parametrize("mode", ["naive", "local"])
@pytest.mark.parametrize("stream", [False, True])
def test_the_answer_is_constrained_to_cite_only_shown_sources(index, embedder, mode, stream):
    """The answer call carries the grammar of prompts.answer_grammar for exactly the shown chunks
    (the model itself is scripted here; test_llm.py runs the grammar on a real model)."""
    llm = FakeLLM(n_params=LARGE, respond=lambda m, s, n: "Milton Keynes", n_ctx=4096)
    with QueryEngine(index, llm=llm, embedder=embedder) as qe:
        r = getattr(qe, f"{mode}_search")("Where is Bletchley Park located?", stream=stream)
        r = r.result if stream else r
    grammar = llm.backend.grammars[-1]
    assert grammar is not None and grammar.startswith("root ::= [^")
    assert set(map(int, re.findall(r'"(\d+)"', grammar))) == r.sources.citable()["sources"] != set()


@pytest.mark.parametrize(
    ("n_ctx", "query", "cause", "other"),
    [
        (400, "Who is Acme?", "n_ctx=400 is too small for any query", "query is too long"),
        (1000, "Who is Acme? " + "And what else about it? " * 60, "the query is too long", "too small for any query"),
    ],
)
def test_a_window_too_small_names_its_cause_in_python_too(index, embedder, n_ctx, query, cause, other):
    with QueryEngine(
        index, llm=FakeLLM(n_params=LARGE, respond=citing_responder, n_ctx=n_ctx), embedder=embedder
    ) as qe:
        with pytest.raises(InputError) as err:
            qe.naive_search(query)
    assert cause in str(err.value) and other not in str(err.value) and "raise --n-ctx" in str(err.value)
