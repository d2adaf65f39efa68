"""Context builders: budgets are never exceeded, shares hold, batches and reduce points fit."""

from __future__ import annotations

import pytest
from test_search_fixtures import DOCS, ENTITIES, RELATIONS, _chunks, _graph

from tiny_graphrag.errors import ConfigError
from tiny_graphrag.index.graph import normalize_name
from tiny_graphrag.records import Chunk, Document, Finding, Report, content_id
from tiny_graphrag.search.config import LocalConfig
from tiny_graphrag.search.context import (
    KeyPoint,
    build_local_context,
    build_naive_context,
    build_reduce_context,
    fit_text,
    local_budgets,
    pack_report_batches,
    pack_table,
)
from tiny_graphrag.search.tokens import approximate_tokens


def words(text: str) -> int:
    return len(text.split())


def lines_cost_more(text: str) -> int:
    """Words plus one token per two line breaks: a table costs more than its rows counted apart."""
    return len(text.split()) + text.count("\n") // 2


def more_than_its_parts(text: str) -> int:
    """Words plus a third of them, rounded down: a text counted whole costs at least the sum of
    its parts counted apart, and often more (as where a tokenizer merges differently across a
    join), so only measuring whole tables and contexts keeps a budget."""
    n = len(text.split())
    return n + n // 3


# The last two do not add up row by row, so the whole-table checks of every packer must run.
COUNTERS = [words, approximate_tokens, lines_cost_more, more_than_its_parts]


def _report(i: int, n_words: int = 30) -> Report:
    return Report(
        f"c{i}",
        0,
        f"Title {i}",
        " ".join(f"w{i}x{j}" for j in range(n_words)),
        5.0,
        "why",
        (Finding("f", "explained"),),
    )


@pytest.fixture(scope="module")
def small_graph():
    docs = [Document(content_id("doc", n), t, n) for n, t in DOCS.items()]
    chunks = [c for d in docs for c in _chunks(d)]
    return _graph(docs, chunks), chunks


@pytest.mark.parametrize("count", COUNTERS)
@pytest.mark.parametrize("budget", [0, 5, 20, 60, 150, 400])
def test_pack_table_never_exceeds_budget(count, budget):
    rows = [(f"{i}|" + "word " * (i % 7 + 1), i) for i in range(40)]
    text, kept, n = pack_table("Sources", "id|text", rows, budget, count)
    assert n == count(text) <= budget
    assert kept == sorted(kept)  # rank order kept
    if budget >= 150:
        assert kept


@pytest.mark.parametrize("count", COUNTERS)
@pytest.mark.parametrize("budget", [80, 200, 500, 2000])
@pytest.mark.parametrize("shares", [(0.5, 0.15), (0.3, 0.3), (0.8, 0.0)])
def test_local_context_respects_budget_and_shares(small_graph, count, budget, shares):
    graph, chunks = small_graph
    cfg = LocalConfig(text_share=shares[0], community_share=shares[1], entity_table=True)
    reports = [(i, _report(i)) for i in range(6)]
    keys = [normalize_name(n) for n in ENTITIES]
    edges = [(normalize_name(h), normalize_name(t), label) for h, t, label, _ in RELATIONS]
    sid_of = {c.id: i + 1 for i, c in enumerate(chunks)}
    built = build_local_context(
        graph=graph,
        entities=keys,
        relationships=edges,
        reports=reports,
        chunks=chunks,
        sid_of=sid_of,
        budget=budget,
        config=cfg,
        count=count,
    )
    assert built.tokens == count(built.text) <= budget
    limits = local_budgets(budget, cfg)
    assert built.section_tokens["reports"] <= limits["reports"]
    assert built.section_tokens["entities"] + built.section_tokens["relationships"] <= limits["graph"]
    assert len(built.sources.reports) <= len(reports)
    if budget >= 2000 and shares == (0.5, 0.15):  # everything fits
        assert len(built.sources.chunks) == len(chunks) and len(built.sources.entities) == len(keys)
    # Every row shown resolves through sources, and every source is shown.
    for c in built.sources.chunks:
        assert f"\n{c.id}|" in built.text


def test_local_shares_validation():
    with pytest.raises(ConfigError, match=r"^LocalConfig\.text_share \+ community_share must be <= 1, got 1\.1"):
        LocalConfig(text_share=0.9, community_share=0.2)
    assert local_budgets(1000, LocalConfig(community_share=0.15)) == {"reports": 150, "graph": 350, "text": 500}
    assert local_budgets(1000, LocalConfig()) == {"reports": 0, "graph": 500, "text": 500}  # no reports by default


@pytest.mark.parametrize("count", COUNTERS)
def test_naive_context_budget(count):
    chunks = [Chunk(f"k{i}", "d", i, "text " * (5 + i), 0, 1, 5 + i) for i in range(30)]
    sid_of = {c.id: i for i, c in enumerate(chunks)}
    built = build_naive_context(chunks, sid_of, 100, count)
    assert built.tokens <= 100 and built.sources.chunks
    assert [c.id for c in built.sources.chunks] == sorted(c.id for c in built.sources.chunks)


@pytest.mark.parametrize("count", COUNTERS)
@pytest.mark.parametrize("chunk_tokens", [60, 120, 400])
def test_map_batches_fit_and_cover_every_report(count, chunk_tokens):
    reports = [(i, _report(i, 5 + 7 * (i % 5))) for i in range(25)] + [(99, _report(99, 500))]  # one too long
    batches = pack_report_batches(reports, chunk_tokens, count, seed=0)
    assert all(b.tokens == count(b.text) <= chunk_tokens for b in batches)
    ids = [r for b in batches for r in b.report_ids]
    assert sorted(ids) == sorted(i for i, _ in reports)  # each report exactly once
    # Shuffled, but deterministic for a seed.
    again = pack_report_batches(reports, chunk_tokens, count, seed=0)
    assert [b.report_ids for b in again] == [b.report_ids for b in batches]


def test_reduce_context_sorts_drops_zero_and_fits():
    points = [KeyPoint(f"point {i} " + "x " * 10, s, i) for i, s in enumerate([10, 0, 90, 50, 0, 70])]
    text, kept, n = build_reduce_context(points, 1000, words)
    assert [p.score for p in kept] == [90, 70, 50, 10]
    assert n == words(text) <= 1000
    text, kept, n = build_reduce_context(points, 40, words)
    assert n <= 40 and [p.score for p in kept][:1] == [90]
    assert build_reduce_context([KeyPoint("x", 0, 0)], 100, words)[1] == []


def test_fit_text():
    text = " ".join(f"w{i}" for i in range(100))
    assert words(fit_text(text, 10, words)) <= 10
    assert fit_text("short", 10, words) == "short"


def test_approximate_tokens_is_conservative_and_handles_scripts():
    assert approximate_tokens("") == 0
    assert approximate_tokens("hello world") >= 2
    assert approximate_tokens("朱元璋是明朝的开国皇帝") >= 10  # about one token per CJK character
    assert approximate_tokens("2024-05-01") >= 3


@pytest.mark.parametrize("count", COUNTERS)
@pytest.mark.parametrize("budget", [10, 25, 40, 80, 200])
def test_reduce_context_fits_any_counter(count, budget):
    points = [KeyPoint(f"point {i} " + "x " * (i % 4), 10 + i, i) for i in range(20)]
    text, kept, n = build_reduce_context(points, budget, count)
    assert n == count(text) <= budget
    assert [p.score for p in kept] == sorted((p.score for p in kept), reverse=True)


def grows_faster(text: str) -> int:
    """Words plus their square / 200: the more rows a table holds, the more each costs."""
    n = len(text.split())
    return n + n * n // 200


@pytest.mark.parametrize("chunk_tokens", [40, 60, 120])
def test_map_batches_fit_where_rows_add_up_to_far_less_than_the_batch(chunk_tokens):
    # Once a batch measured whole was over, its last row alone was moved on and the rest kept
    # unchecked: here that rest was still over (71 tokens in a 60-token batch).
    reports = [(i, Report(f"c{i}", 0, "T", "x", 5.0, "", ())) for i in range(40)]
    batches = pack_report_batches(reports, chunk_tokens, grows_faster, seed=0)
    assert all(b.tokens == grows_faster(b.text) <= chunk_tokens for b in batches)
    assert sorted(r for b in batches for r in b.report_ids) == list(range(40))


@pytest.mark.parametrize("count", COUNTERS)
@pytest.mark.parametrize("budget", [80, 300, 2000])
def test_local_context_puts_text_first_and_omits_cooccurrence_rows(small_graph, count, budget):
    graph, chunks = small_graph
    keys = [normalize_name(n) for n in ENTITIES]
    edges = [(normalize_name(h), normalize_name(t), label) for h, t, label, _ in RELATIONS]
    sid_of = {c.id: i + 1 for i, c in enumerate(chunks)}
    common = dict(
        graph=graph,
        entities=keys,
        relationships=edges,
        reports=[(i, _report(i)) for i in range(3)],
        chunks=chunks,
        sid_of=sid_of,
        budget=budget,
        config=LocalConfig(),
        count=count,
    )
    built = build_local_context(**common)
    omitted = build_local_context(**common, omit_relations={"located in"})
    for b in (built, omitted):
        assert b.tokens == count(b.text) <= budget
        if b.sources.chunks:  # a small reader answers from what it reads first: the text
            assert b.text.startswith("-----Sources-----")
    assert all(r.label != "located in" for r in omitted.sources.relationships)
    assert "|located in|" not in omitted.text
    if budget == 2000:
        assert any(r.label == "located in" for r in built.sources.relationships)
        # What the omitted rows would have used goes to text, never less text than before.
        assert len(omitted.sources.chunks) >= len(built.sources.chunks)


@pytest.mark.parametrize("count", COUNTERS)
def test_local_context_without_the_entity_table(small_graph, count):
    graph, chunks = small_graph
    keys = [normalize_name(n) for n in ENTITIES]
    edges = [(normalize_name(h), normalize_name(t), label) for h, t, label, _ in RELATIONS]
    sid_of = {c.id: i + 1 for i, c in enumerate(chunks)}
    common = dict(
        graph=graph,
        entities=keys,
        relationships=edges,
        reports=[],
        chunks=chunks,
        sid_of=sid_of,
        budget=2000,
        count=count,
    )
    shown = build_local_context(**common, config=LocalConfig(entity_table=True))
    hidden = build_local_context(**common, config=LocalConfig(entity_table=False))
    assert "-----Entities-----" in shown.text and shown.sources.entities
    assert "-----Entities-----" not in hidden.text and not hidden.sources.entities
    assert hidden.sources.relationships == shown.sources.relationships  # only the entity rows go
    assert hidden.tokens == count(hidden.text) <= 2000
