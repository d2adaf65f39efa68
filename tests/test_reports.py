"""Community report context budgets, sub-report substitution, citations and generation (FakeLLM)."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace

import networkx as nx
import pytest
from _fakes import FakeLLM

from tiny_graphrag.backends.llm import ContextWindowError
from tiny_graphrag.citations import check_citations, filter_citations, parse_citations
from tiny_graphrag.config import CommunityConfig
from tiny_graphrag.index.cache import CallCache
from tiny_graphrag.records import Community, Finding, Report
from tiny_graphrag.reports.communities import hierarchical_communities
from tiny_graphrag.reports.context import SourceText, build_report_context
from tiny_graphrag.reports.generate import FALLBACK_EXPLANATION, generate_reports
from tiny_graphrag.reports.parse import end_at_boundary, parse_report_json, trim_to_bounds
from tiny_graphrag.reports.prompt import REPORT_SCHEMA, prompt_tokens, report_messages, report_schema

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()


def make_graph(seed: int = 0, n_nodes: int = 40, n_edges: int = 90, n_singletons: int = 3):
    """A graph in the pipeline's contract (hids, labels, weights, provenance) plus its sources."""
    r = random.Random(seed)
    # With each chunk's start in its document: provenance offsets are document-level.
    sources = {
        f"chunk{j}": SourceText(500 + j, " ".join(r.choice(WORDS) for _ in range(150)), 10_000 * j) for j in range(12)
    }
    g = nx.MultiDiGraph()
    for i in range(n_nodes + n_singletons):
        g.add_node(
            f"node {i}",
            name=f"Node {i}",
            type=r.choice(["person", "organization"]),
            mentions=r.randint(1, 6),
            provenance=[("doc", f"chunk{r.randint(0, 11)}", 0, 10)],
            hid=i,
        )
    hid = 1000
    for _ in range(n_edges):
        a, b = r.sample(range(n_nodes), 2)
        label = r.choice(["works with", "owns", "knows"])
        if g.has_edge(f"node {a}", f"node {b}", label):
            continue
        chunk = r.randint(0, 11)
        start = 10_000 * chunk + r.randint(0, 700)
        g.add_edge(
            f"node {a}",
            f"node {b}",
            key=label,
            label=label,
            score=0.9,
            weight=r.randint(1, 4),
            provenance=[("doc", "missing", 0, 5), ("doc", f"chunk{chunk}", start, start + 25)],
            hid=hid,
        )
        hid += 1
    return g, sources


# Tokenizers with different join behaviour: the budget must hold for each, exactly.
def words(text: str) -> int:
    return len(text.split())


def word_punct(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def chars(text: str) -> int:
    return (len(text) + 2) // 3


def costly_newlines(text: str) -> int:  # joins cost more than the builder's per-row estimate
    return len(text.split()) + 3 * text.count("\n")


TOKENIZERS = [pytest.param(t, id=t.__name__) for t in (words, word_punct, chars, costly_newlines)]


def fake_report(i: int = 0, explanation: str = "It is so [Data: Entities (0)].") -> Report:
    return Report(f"c{i}", 1, f"Title {i}", f"Summary {i}", 5.0, "why", (Finding("finding", explanation),))


def ids_of(rows) -> tuple[int, ...]:
    """The ids (first field) of a context's rows, in the order shown."""
    return tuple(row[0] for row in rows)


def table_ids(text: str) -> dict[str, set[int]]:
    """Ids in the first column of each table of a context or prompt."""
    out = {"entities": set(), "relationships": set(), "sources": set()}
    current = None
    for line in text.splitlines():
        m = re.fullmatch(r"-----(\w+)-----", line.strip())
        if m:
            current = m.group(1).lower()
            continue
        if current in out and line[:1].isdigit():
            out[current].add(int(line.split("|", 1)[0]))
    return out


@pytest.fixture(scope="module")
def graph_and_communities():
    g, sources = make_graph()
    comms = hierarchical_communities(g, CommunityConfig(max_cluster_size=5, chunk_weight=0))
    assert max(c.level for c in comms) >= 1
    return g, sources, comms


# -- context builder ------------------------------------------------------------------------


@pytest.mark.parametrize("count", TOKENIZERS)
def test_budget_never_exceeded(graph_and_communities, count):
    g, sources, comms = graph_and_communities
    base = prompt_tokens(report_messages(""), count)
    by_id = {c.id: c for c in comms}
    subs = {c.id: fake_report(i) for i, c in enumerate(comms)}
    for budget in range(base + 40, base + 1500, 97):
        for c in comms:
            try:
                ctx = build_report_context(c, g, sources, count, budget, subs, communities=by_id)
            except ContextWindowError:
                continue  # only when not even one element fits; checked below
            n = prompt_tokens(report_messages(ctx.text, grounded=bool(ctx.sources)), count)  # as it is asked
            assert n == ctx.n_tokens
            assert n <= budget
            ids = table_ids(ctx.text)
            assert ids == ctx.citable()
            assert ids["sources"] == set(ctx.source_ids)
            assert ctx.text  # something always fits when no error is raised


def test_leaf_context_orders_by_combined_degree_and_stops_at_budget(graph_and_communities):
    g, sources, comms = graph_and_communities
    leaf = max((c for c in comms if not c.children), key=lambda c: len(c.edges))
    full = build_report_context(leaf, g, sources, words, 100_000)
    assert len(ids_of(full.relationships)) == len(leaf.edges)
    assert set(ids_of(full.entities)) == {g.nodes[n]["hid"] for n in leaf.nodes}
    hid_to_edge = {g.edges[e]["hid"]: e for e in leaf.edges}
    degrees = [g.degree(hid_to_edge[h][0]) + g.degree(hid_to_edge[h][1]) for h in ids_of(full.relationships)]
    assert degrees == sorted(degrees, reverse=True)
    # A tighter budget keeps a prefix of that order.
    small = build_report_context(leaf, g, sources, words, full.n_tokens - 30)
    assert 0 < len(ids_of(small.relationships)) < len(ids_of(full.relationships))
    assert ids_of(small.relationships) == ids_of(full.relationships)[: len(ids_of(small.relationships))]
    # Sources carry the text around each supporting span, never a chunk we have no text for.
    assert set(full.source_ids) <= {entry.sid for entry in sources.values()}


def test_singleton_context_is_just_the_entity_row(graph_and_communities):
    g, sources, comms = graph_and_communities
    singleton = next(c for c in comms if c.nodes == ("node 40",))
    ctx = build_report_context(singleton, g, sources, words, 10_000)
    assert ctx.text.startswith("-----Entities-----\nid|entity|type|mentions\n40|Node 40|")
    assert "Relationships" not in ctx.text and "Sources" not in ctx.text
    assert ids_of(ctx.entities) == (40,) and ids_of(ctx.relationships) == () and ctx.source_ids == ()


def snippet_graph():
    filler = "lorem ipsum dolor sit amet " * 20
    text = filler + "Marie Curie married Pierre Curie in Paris." + " " + filler
    at = len(filler)
    g = nx.MultiDiGraph()
    g.add_node("marie", name="Marie Curie", type="person", mentions=1, hid=0)
    g.add_node("pierre", name="Pierre Curie", type="person", mentions=1, hid=1)
    doc_start = 5000  # the chunk starts at this offset of its document
    g.add_edge(
        "marie",
        "pierre",
        key="spouse",
        label="spouse",
        weight=1,
        hid=7,
        provenance=[("doc", "c", doc_start + at, doc_start + at + 32)],
    )
    community = Community("c1", 0, ("marie", "pierre"), edges=(("marie", "pierre", "spouse"),))
    return g, community, text, doc_start


def source_rows(text: str) -> list[str]:
    return text.split("-----Sources-----\nid|text\n", 1)[1].splitlines()


def test_source_snippet_uses_document_offsets():
    g, community, text, doc_start = snippet_graph()
    ctx = build_report_context(community, g, {"c": SourceText(3, text, doc_start)}, words, 10_000)
    (row,) = source_rows(ctx.text)
    assert row.startswith("3|") and "Marie Curie married Pierre Curie in Paris." in row
    assert len(row) < len(text) / 2 and row.count("lorem") < 10  # a window, not the whole chunk
    assert ctx.source_ids == (3,)


def test_source_snippet_without_chunk_offset_finds_the_names():
    g, community, text, _ = snippet_graph()
    ctx = build_report_context(community, g, {"c": SourceText(3, text)}, words, 10_000)
    (row,) = source_rows(ctx.text)
    assert "Marie Curie married Pierre Curie" in row and len(row) < len(text) / 2


def test_budget_too_small_raises_a_clear_error(graph_and_communities):
    g, sources, comms = graph_and_communities
    base = prompt_tokens(report_messages(""), words)
    leaf = next(c for c in comms if c.edges)
    with pytest.raises(ContextWindowError, match="n_ctx"):
        build_report_context(leaf, g, sources, words, base + 3)
    with pytest.raises(ContextWindowError, match="max_report_tokens"):
        build_report_context(leaf, g, sources, words, base - 1)


def test_higher_level_uses_all_elements_when_they_fit(graph_and_communities):
    g, sources, comms = graph_and_communities
    by_id = {c.id: c for c in comms}
    parent = max((c for c in comms if len(c.children) > 1), key=lambda c: len(c.edges))
    subs = {k: fake_report(i) for i, k in enumerate(parent.children)}
    ctx = build_report_context(parent, g, sources, words, 100_000, subs, communities=by_id)
    assert ctx.sub_report_ids == ()
    assert len(ids_of(ctx.relationships)) == len(parent.edges)


def test_higher_level_substitutes_sub_reports_largest_first(graph_and_communities):
    g, sources, comms = graph_and_communities
    by_id = {c.id: c for c in comms}
    parent = max((c for c in comms if len(c.children) > 1), key=lambda c: len(c.edges))
    subs = {k: fake_report(i) for i, k in enumerate(parent.children)}
    full = build_report_context(parent, g, sources, words, 100_000, subs, communities=by_id)
    ctx = build_report_context(parent, g, sources, words, full.n_tokens - 20, subs, communities=by_id)
    assert ctx.sub_report_ids, "the elements did not fit, so sub-reports must replace some"
    assert ctx.n_tokens <= full.n_tokens - 20
    kids = sorted((by_id[k] for k in parent.children), key=lambda c: (-len(c.nodes), -len(c.edges), c.id))
    assert list(ctx.sub_report_ids) == [k.id for k in kids[: len(ctx.sub_report_ids)]]
    replaced_edges = {g.edges[e]["hid"] for k in kids[: len(ctx.sub_report_ids)] for e in k.edges}
    assert not replaced_edges & set(ids_of(ctx.relationships))
    assert "-----Reports-----" in ctx.text and "Title" in ctx.text
    assert "[Data:" not in ctx.text.split("-----Entities-----")[0], "sub-report citations are stripped"


def test_only_sub_reports_when_nothing_else_fits(graph_and_communities):
    g, sources, comms = graph_and_communities
    by_id = {c.id: c for c in comms}
    parent = max((c for c in comms if len(c.children) > 1), key=lambda c: len(c.edges))
    subs = {k: fake_report(i) for i, k in enumerate(parent.children)}
    base = prompt_tokens(report_messages(""), words)
    ctx = build_report_context(parent, g, sources, words, base + 25, subs, communities=by_id)
    assert ctx.sub_report_ids and ctx.n_tokens <= base + 25


# -- citations ------------------------------------------------------------------------------


def test_parse_citations():
    text = (
        "A [Data: Entities (1, 2, +more); Relationships (7)]. B [Data: Sources (3); Entities (2, 5)] "
        "C [Data: Reports (0)] D [data: Relationship (8)]"
    )
    assert parse_citations(text) == {
        "entities": [1, 2, 5],
        "relationships": [7, 8],
        "sources": [3],
        "reports": [0],
    }


def test_filter_citations_keeps_only_existing_ids():
    citable = {"entities": {1, 2}, "relationships": {7}, "sources": set()}
    text = "A is B [Data: Entities (1, 99); Relationships (7, 8); Sources (3)]. C [Data: Sources (4)] end."
    out = filter_citations(text, citable)
    assert out == "A is B [Data: Entities (1); Relationships (7)]. C end."
    assert parse_citations(out)["sources"] == []


class _Shown:
    def citable(self) -> dict[str, set[int]]:
        return {"reports": {16}, "sources": set(), "entities": set(), "relationships": set()}


@pytest.mark.parametrize(
    "answer, expected, removed",
    [
        ("Mercury boils at 357 C. [Data: Reports (16)]", "Mercury boils at 357 C. [Data: Reports (16)]", {}),
        # the prompt's citation form copied as it stands (a 0.5B reduce did): no id, so no citation
        ("Mercury boils at 357 C. [Data: Reports (ids)]", "Mercury boils at 357 C.", {}),
        (
            "Mercury boils at 357 C. [Data: Reports (ids)] [Data: Reports (16, 4)]",
            "Mercury boils at 357 C. [Data: Reports (16)]",
            {"reports": (4,)},
        ),
    ],
)
def test_check_citations_drops_ids_not_shown_and_blocks_without_ids(answer, expected, removed):
    assert check_citations(answer, _Shown()) == (expected, removed)


# -- parsing and repair ---------------------------------------------------------------------

GOOD = {
    "title": "T",
    "summary": "S",
    "rating": 12,
    "rating_explanation": "R",
    "findings": [{"summary": "f1", "explanation": "e1"}, {"summary": "f2", "explanation": "e2 long text"}],
}


def test_parse_report_json_valid_and_clamped():
    data, repaired = parse_report_json(json.dumps(GOOD))
    assert not repaired and data["rating"] == 10.0 and len(data["findings"]) == 2


def test_parse_report_json_repairs_a_cut_off_finding():
    text = json.dumps(GOOD)
    cut = text[: text.index("long")]  # inside the second finding's explanation
    data, repaired = parse_report_json(cut, truncated=True)
    assert repaired and [f["summary"] for f in data["findings"]] == ["f1"]


def test_parse_report_json_gives_up_when_required_fields_are_cut():
    text = json.dumps(GOOD)
    assert parse_report_json(text[: text.index("rating")], truncated=True) is None
    assert parse_report_json("not json") is None
    assert parse_report_json(json.dumps({**GOOD, "findings": []})) is None


# -- generation with the fake LLM -----------------------------------------------------------


def citing_responder(messages, schema, max_tokens):
    """A schema-valid report citing one id from each table of the prompt plus invented ones."""
    ids = table_ids(messages[-1]["content"])
    pick = lambda kind: min(ids[kind]) if ids[kind] else 0  # noqa: E731
    cite = (
        f"[Data: Entities ({pick('entities')}, 99999); Relationships ({pick('relationships')}, 88888); "
        f"Sources ({pick('sources')}, 77777); Reports (0)]"
    )
    return {
        "title": "Community",
        "summary": f"About it {cite}",
        "rating": 4.5,
        "rating_explanation": "Middling.",
        "findings": [{"summary": "Main link", "explanation": f"They relate {cite}"}],
    }


def test_generate_reports_end_to_end_and_cached(graph_and_communities, tmp_path):
    g, sources, comms = graph_and_communities
    llm = FakeLLM(citing_responder, n_ctx=1200, cache=CallCache(tmp_path / "calls.sqlite"))
    reports = generate_reports(g, comms, sources, llm, max_report_tokens=200)
    assert [r.community_id for r in reports] == [c.id for c in comms]
    assert [r.level for r in reports] == [c.level for c in comms]
    assert llm.calls > 0 and all(r.findings for r in reports)
    # Deepest level first: each parent's prompt came after its children's.
    assert len(llm.requests) == llm.calls
    # Every stored citation exists in the context the model saw.
    prompts = [req["messages"][-1]["content"] for req in llm.requests]
    for r in reports:
        cites = parse_citations(r.findings[0].explanation)
        assert not cites["reports"]
        assert 99999 not in cites["entities"] and 88888 not in cites["relationships"]
        assert 77777 not in cites["sources"]
        assert any(
            all(i in table_ids(p)[k] for k in ("entities", "relationships", "sources") for i in cites[k])
            for p in prompts
        )
    assert any(parse_citations(r.findings[0].explanation)["relationships"] for r in reports)
    # Every prompt respected the model's window.
    assert all(prompt_tokens(req["messages"], llm.count_tokens) + req["max_tokens"] <= 1200 for req in llm.requests)

    # An identical second run (new process: new LLM object, same cache file) makes no model call.
    again = FakeLLM(citing_responder, n_ctx=1200, cache=CallCache(tmp_path / "calls.sqlite"))
    assert generate_reports(g, comms, sources, again, max_report_tokens=200) == reports
    assert again.calls == 0 and again.cache_hits == llm.calls


def test_carried_down_community_reuses_its_childs_report():
    g = nx.MultiDiGraph()
    for i, n in enumerate("abc"):
        g.add_node(n, name=n.upper(), type="t", mentions=1, hid=i)
    g.add_edge("a", "b", key="r", label="r", weight=1, provenance=[], hid=10)
    child = Community("child", 1, ("a", "b"), parent="root")
    root = Community("root", 0, ("a", "b"), children=("child",), edges=(("a", "b", "r"),))
    child = Community("child", 1, ("a", "b"), parent="root", edges=(("a", "b", "r"),))
    llm = FakeLLM()
    reports = generate_reports(g, [root, child], {}, llm, max_report_tokens=100)
    assert llm.calls == 1
    assert reports[0].community_id == "root" and reports[0].level == 0
    assert reports[0].title == reports[1].title and reports[0].findings == reports[1].findings


def long_report(n_findings: int = 5) -> dict:
    return {
        "title": "Long",
        "summary": "word " * 30,
        "rating": 3,
        "rating_explanation": "because",
        "findings": [{"summary": f"f{i}", "explanation": "lots of words " * 10} for i in range(n_findings)],
    }


def single_leaf():
    g = nx.MultiDiGraph()
    g.add_node("a", name="A", type="t", mentions=1, hid=0)
    return g, [Community("c", 0, ("a",))]


def test_truncated_output_is_retried_with_more_tokens():
    g, comms = single_leaf()
    llm = FakeLLM(lambda m, s, n: long_report(), n_ctx=4000)
    # The JSON is ~200 words: 150 is cut off, the retry (300) is not.
    (report,) = generate_reports(g, comms, {}, llm, max_report_tokens=150)
    assert [r["max_tokens"] for r in llm.requests] == [150, 300]
    assert len(report.findings) == 5


def test_truncated_twice_is_repaired_by_dropping_the_unfinished_finding():
    g, comms = single_leaf()
    llm = FakeLLM(lambda m, s, n: long_report(), n_ctx=4000)
    (report,) = generate_reports(g, comms, {}, llm, max_report_tokens=70)
    assert [r["max_tokens"] for r in llm.requests] == [70, 140]
    assert 1 <= len(report.findings) < 5
    assert all(f.explanation.endswith("words") for f in report.findings), "no cut-off finding is stored"


def test_retry_is_limited_by_the_context_window():
    g, comms = single_leaf()
    llm = FakeLLM(lambda m, s, n: long_report(), n_ctx=280)
    prompt = prompt_tokens(report_messages(build_report_context(comms[0], g, {}, llm.count_tokens, 200).text), words)
    generate_reports(g, comms, {}, llm, max_report_tokens=70, max_context_tokens=200)
    assert [r["max_tokens"] for r in llm.requests] == [70, min(140, 280 - prompt)]


@pytest.mark.parametrize(
    "respond, max_tokens, n_requests",
    [
        (lambda m, s, n: long_report(), 10, 2),  # cut inside the summary, twice
        (lambda m, s, n: "no json here", 100, 2),  # ends early: one more try, then the fallback
        (lambda m, s, n: '{"title": "T", "summary": "S\n- 1\n- 2", "rating": 3}', 100, 2),  # no findings
    ],
)
def test_unrepairable_output_falls_back_to_a_member_list(respond, max_tokens, n_requests):
    g = nx.MultiDiGraph()
    g.add_node("a", name="Alice", type="Person", mentions=2, hid=0)
    g.add_node("b", name="Acme, Inc", type="Organization", mentions=1, hid=1)
    g.add_edge("a", "b", key="works for", label="works for", score=0.9, weight=2, provenance=[], hid=0)
    comms = [Community("c", 0, ("a", "b"), edges=(("a", "b", "works for"),))]
    llm = FakeLLM(respond, n_ctx=4000)
    (report,) = generate_reports(g, comms, {}, llm, max_report_tokens=max_tokens)
    assert len(llm.requests) == n_requests
    assert report.fallback and report.rating == 0 and report.rating_explanation == FALLBACK_EXPLANATION
    assert "Alice" in report.summary and "Acme, Inc" in report.summary
    assert report.findings[0].summary == "Alice works for Acme, Inc"
    cited = parse_citations(" ".join([report.summary] + [f.explanation for f in report.findings]))
    assert set(cited["entities"]) <= {0, 1} and set(cited["relationships"]) <= {0}


def test_fallback_is_built_from_the_context_data_and_flagged(tmp_path):
    g = nx.MultiDiGraph()
    # Names with the table's separator and commas: the fallback quotes them as they are.
    g.add_node("a", name="Alice | A.", type="Person", mentions=2, hid=4)
    g.add_node("b", name="Acme, Inc", type="Organization", mentions=1, hid=5)
    g.add_edge("a", "b", key="works for", label="works for", weight=2, provenance=[], hid=9)
    comms = [Community("c", 0, ("a", "b"), edges=(("a", "b", "works for"),))]
    (report,) = generate_reports(g, comms, {}, FakeLLM(lambda m, s, n: "no json"), max_report_tokens=100)
    assert report.fallback and report.title == "Alice | A. and related entities"
    assert report.findings == (
        Finding("Alice | A. works for Acme, Inc", "Alice | A. works for Acme, Inc [Data: Relationships (9)]"),
    )
    assert report.summary.endswith("[Data: Entities (4, 5)]")
    (good,) = generate_reports(g, comms, {}, FakeLLM(), max_report_tokens=100)
    assert not good.fallback
    # The flag is stored with the index; reports stored before it existed load as not fallback.
    from dataclasses import asdict

    from tiny_graphrag.index.store import IndexStore

    store = IndexStore.create(tmp_path / "idx")
    store.save_reports([report, replace(good, community_id="old")])
    store._db.execute("UPDATE reports SET body = json_remove(body, '$.fallback') WHERE community_id = 'old'")
    loaded = {r.community_id: r for r in store.reports()}
    assert loaded["c"] == report and loaded["old"].fallback is False and "fallback" in asdict(loaded["old"])
    store.close()


def test_carried_down_fallback_report_stays_flagged():
    g = nx.MultiDiGraph()
    g.add_node("a", name="A", type="t", mentions=1, hid=0)
    comms = [Community("root", 0, ("a",), children=("child",)), Community("child", 1, ("a",), parent="root")]
    reports = generate_reports(g, comms, {}, FakeLLM(lambda m, s, n: "no json"), max_report_tokens=100)
    assert [(r.community_id, r.fallback) for r in reports] == [("root", True), ("child", True)]


def test_raw_newlines_inside_strings_still_parse():
    text = (
        '{"title": "T", "summary": "line one\nline two", "rating": 12, "rating_explanation": "x", '
        '"findings": [{"summary": "f", "explanation": "e"}]}'
    )
    assert "\n" in text  # a raw newline, which strict JSON refuses inside a string
    data, repaired = parse_report_json(text)
    assert data["summary"] == "line one line two" and data["rating"] == 10.0 and not repaired


def test_no_room_for_a_prompt_raises():
    g, comms = single_leaf()
    with pytest.raises(ContextWindowError, match="n_ctx"):
        generate_reports(g, comms, {}, FakeLLM(n_ctx=500), max_report_tokens=480)
    with pytest.raises(ContextWindowError, match="max_context_tokens=400"):
        generate_reports(g, comms, {}, FakeLLM(n_ctx=500), max_report_tokens=200, max_context_tokens=400)


def test_report_schema_shape():
    assert set(REPORT_SCHEMA["required"]) == {"title", "summary", "rating", "rating_explanation", "findings"}
    findings = REPORT_SCHEMA["properties"]["findings"]
    assert (findings["minItems"], findings["maxItems"]) == (1, 5)
    # Evidence first: the model writes the properties in this order (the grammar follows it).
    assert list(REPORT_SCHEMA["properties"]) == ["findings", "rating", "rating_explanation", "summary", "title"]
    assert list(findings["items"]["properties"]) == ["explanation", "summary"]


def test_fake_llm_contract():
    llm = FakeLLM()
    out = llm.complete([{"role": "user", "content": "hi there"}], schema=REPORT_SCHEMA, max_tokens=50)
    assert parse_report_json(out.text) is not None and out.prompt_tokens == 2 and not out.cached
    again = llm.complete([{"role": "user", "content": "hi there"}], schema=REPORT_SCHEMA, max_tokens=50)
    assert again.cached and again.text == out.text and llm.calls == 1 and llm.cache_hits == 1
    streamed = "".join(llm.stream([{"role": "user", "content": "a b c"}], max_tokens=10))
    assert streamed == "echo: a b c" and llm.calls == 2
    with pytest.raises(ContextWindowError, match="n_ctx=4096"):
        llm.complete([{"role": "user", "content": "w " * 4000}], max_tokens=200)


@pytest.mark.parametrize(
    "text, bound, expected",
    [
        ("Short and whole.", 80, "Short and whole."),
        (
            "Longer than its bound, so no grammar cut it, and it is left",
            20,
            "Longer than its bound, so no grammar cut it, and it is left",
        ),
        ("Obama's policies have significantly impacted,", 45, "Obama's policies have significantly…"),
        ("Netflix is the key entity in the commu,", 40, "Netflix is the key entity in the…"),  # a word ended early
        ("", 2, ""),
        ("as well as the Affordable Cæ", 28, "as well as the Affordable…"),
        (
            "Iraq is a country with a history of conflict and violence, and its troops have a",
            80,
            "Iraq is a country with a history of conflict and violence…",
        ),
        (
            "Libya is a country of many people. It signed treaties with the European Union and the Arab League. "
            "The country has a strong and",
            128,
            "Libya is a country of many people. It signed treaties with the European Union and the Arab League.",
        ),
    ],
)
def test_a_string_stopped_at_its_bound_ends_at_a_boundary(text, bound, expected):
    assert bound - 2 <= len(text) <= bound or text == expected
    assert end_at_boundary(text, bound) == expected


def test_reports_strings_at_their_bounds_are_trimmed_the_rest_kept():
    schema = report_schema(300)
    props = schema["properties"]
    at_bound = ("words " * 100)[: props["summary"]["maxLength"]]  # ends mid-word: "... words word"
    data = {
        "title": "Curie family",
        "summary": at_bound,
        "rating": 5.0,
        "rating_explanation": "Central.",
        "findings": [{"summary": "Married in 1895.", "explanation": "They married in 1895, in Sceaux."}],
    }
    out = trim_to_bounds(data, schema)
    assert out["summary"].endswith("words…") and len(out["summary"]) < len(at_bound)
    assert {k: v for k, v in out.items() if k != "summary"} == {k: v for k, v in data.items() if k != "summary"}


def _text_report(summary: str, *findings: tuple[str, str]) -> Report:
    return Report("c0", 0, "Obama's community", summary, 7.0, "why", tuple(Finding(s, e) for s, e in findings))


def test_report_text_holds_every_distinct_string_once():
    r = _text_report(
        "Obama led the Democrats.",
        ("Stimulus", "The stimulus ended the recession."),
        ("Dodd-Frank", "Dodd-Frank reformed finance."),
    )
    assert r.text() == (
        "# Obama's community\n\nObama led the Democrats.\n\n## Stimulus\n\n"
        "The stimulus ended the recession.\n\n## Dodd-Frank\n\nDodd-Frank reformed finance."
    )


def test_report_text_leaves_out_strings_another_one_already_holds():
    # A 0.5B model's finding summaries are its explanations' first words, cut at their bound
    # with "…"; a summary may repeat a finding word for word; whole words only count.
    r = _text_report(
        "The United States is a location",
        ("Obama's economic stimulus package ended…", "Obama's economic stimulus package ended the Great Recession."),
        ("The United States is a location", "The United States is a location"),
        ("Stim", "A stimulus for every state."),
    )
    assert r.text() == (
        "# Obama's community\n\nObama's economic stimulus package ended the Great Recession.\n\n"
        "The United States is a location\n\n## Stim\n\nA stimulus for every state."
    )
    assert r.text().count("The United States is a location") == 1


def test_report_text_of_an_empty_string_leaves_no_blank_heading():
    r = _text_report("", ("", "Only an explanation."))
    assert r.text() == "# Obama's community\n\nOnly an explanation."


# -- grounded findings: the model chooses Sources rows, the report quotes them --------------------


def test_a_context_with_sources_asks_for_grounded_findings():
    schema = report_schema(300, sources=[7, 3, 7])
    item = schema["properties"]["findings"]["items"]
    assert list(item["properties"]) == ["source", "summary"]  # the row first, then its one-line summary
    assert item["properties"]["source"] == {"enum": [3, 7]} and item["required"] == ["source", "summary"]
    assert schema["properties"]["findings"]["maxItems"] == 2  # no more findings than rows to choose from
    assert report_schema(300)["properties"]["findings"]["items"]["properties"].keys() == {"explanation", "summary"}
    user = report_messages("DATA", grounded=True)[-1]["content"]
    assert "the id of the Sources row that states it" in user and "an explanation grounded" not in user


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Obama was born in Hawaii. He studied law.", "Obama was born in Hawaii. He studied law."),
        ("...senator from Illinois. Obama was born in Hawaii. He left for...", "Obama was born in Hawaii."),
        ("...only a fragment here...", "only a fragment here"),
        ("Obama was born in Hawaii. He left for... ...the next span.", "Obama was born in Hawaii."),
        ("Obama was born\n\nin Hawaii.", "Obama was born in Hawaii."),
        ("...cut. " + "word " * 100 + "end.", ("word " * 100)[:320].rsplit(" ", 1)[0] + "…"),
    ],
)
def test_a_finding_quotes_whole_sentences_of_its_row(text, expected):
    from tiny_graphrag.reports.generate import quote

    assert quote(text) == expected.strip()


def test_grounded_findings_quote_the_rows_the_model_chose(graph_and_communities):
    """The explanation of a grounded finding is its row's own words, cited; a row chosen twice
    counts once, and a row the context did not hold (a backend ignoring the schema) is dropped."""
    from tiny_graphrag.reports.generate import generate_report, quote

    g, sources, comms = graph_and_communities
    leaf = next(c for c in comms if c.level == max(x.level for x in comms) and c.edges)
    context = build_report_context(leaf, g, sources, lambda t: len(t.split()), 2000)
    assert context.sources
    sid, shown = context.sources[0]

    def respond(messages, schema, max_tokens):
        assert schema["properties"]["findings"]["items"]["properties"]["source"]["enum"] == sorted(context.source_ids)
        return {
            "findings": [
                {"source": sid, "summary": "Node ties"},
                {"source": sid, "summary": "again"},
                {"source": 123456, "summary": "not shown"},
            ],
            "rating": 3,
            "rating_explanation": "Some.",
            "summary": "A summary.",
            "title": "Nodes",
        }

    report = generate_report(leaf, context, FakeLLM(respond, n_ctx=4000), max_report_tokens=300)
    assert report.findings == (Finding("Node ties", f"{quote(shown)} [Data: Sources ({sid})]"),)
    assert quote(shown) in shown.replace("...", " ") or quote(shown).rstrip("…") in shown


def test_a_grounded_context_counts_the_prompt_it_is_asked_with(graph_and_communities):
    """A context with Sources rows is asked with the grounded prompt (longer than the free one):
    its token count and its budget check are of that prompt, so it never runs over the budget."""
    g, sources, comms = graph_and_communities
    leaf = next(c for c in comms if c.level == max(x.level for x in comms) and c.edges)
    words = lambda t: len(t.split())  # noqa: E731
    context = build_report_context(leaf, g, sources, words, 2000)
    assert context.sources
    asked = prompt_tokens(report_messages(context.text, grounded=True), words)
    assert asked > prompt_tokens(report_messages(context.text), words)
    assert context.n_tokens == asked
    # At a budget the free prompt would fit exactly, the grounded one must still fit.
    budget = prompt_tokens(report_messages(context.text), words)
    tight = build_report_context(leaf, g, sources, words, budget)
    assert tight is None or prompt_tokens(report_messages(tight.text, grounded=bool(tight.sources)), words) <= budget


@pytest.mark.parametrize(
    "title, expected",
    [
        ("Obama's health care reform", "Obama's health care reform"),  # names an entity: kept
        ("Affordable Care Act,", "Affordable Care Act"),  # a stray comma trimmed
        (",", "Barack Obama, Affordable Care Act and Congress"),
        ("The Community", "Barack Obama, Affordable Care Act and Congress"),
        ("skinny repeal,", "Barack Obama, Affordable Care Act and Congress"),
        ("Netflix, in February 2021, Obama and", "Barack Obama, Affordable Care Act and Congress"),  # cut off
        ("Obama's health care…", "Barack Obama, Affordable Care Act and Congress"),
    ],
)
def test_a_title_that_names_no_entity_of_its_community_is_made_from_them(title, expected):
    from tiny_graphrag.reports.generate import community_title

    names = ["Barack Obama", "Affordable Care Act", "Congress", "Medicaid"]
    assert community_title(title, names) == expected
    assert community_title(title, []) == (title.strip(" ,;:.-") or title)


def test_a_summary_cut_off_or_of_filler_is_the_first_sentence_its_community_quotes():
    from tiny_graphrag.records import Finding
    from tiny_graphrag.reports.generate import community_summary

    names = ["Barack Obama", "Affordable Care Act"]
    quote = "Obama signed the Affordable Care Act in 2010. It expanded coverage. [Data: Sources (7)]"
    findings = [Finding("ACA", quote)]
    good = "Obama's health care law, the Affordable Care Act, expanded coverage."
    assert community_summary(good, names, findings) == good
    for bad in (
        "Obama is the leader of the United States and,",
        "The community is highly important as it is a key entity.",
    ):
        assert (
            community_summary(bad, names, findings)
            == "Obama signed the Affordable Care Act in 2010. [Data: Sources (7)]"
        )


def test_own_names_put_a_communitys_own_entities_before_a_name_every_chunk_holds():
    """A fallback title names what sets a community apart: the hub ("USA", in every chunk, and most
    connected) comes after entities named only in this community's chunks, and an entity shared with
    another community's chunks comes after one that is not."""
    from collections import Counter

    from tiny_graphrag.index.graph import node_chunks
    from tiny_graphrag.reports.context import own_names

    g = nx.MultiDiGraph()
    chunks = {"USA": "abcdef", "Michelle": "ab", "Netflix": "a", "Chicago": "bc", "Kenya": "cde", "Obama Sr.": "de"}
    for name, cs in chunks.items():
        g.add_node(name, name=name, provenance=[("d", f"c{c}", 0, 1) for c in cs])
    for other in ("Michelle", "Netflix", "Chicago", "Kenya", "Obama Sr."):  # the hub is the most connected
        g.add_edge("USA", other, key="r", label="r")
    ours = Community("c0", 0, ("USA", "Michelle", "Netflix", "Chicago"))
    sizes = Counter(c for n in g for c in node_chunks(g, n))
    assert sizes == {"ca": 3, "cb": 3, "cc": 3, "cd": 3, "ce": 3, "cf": 1}
    own = own_names(ours, g, sizes)
    assert set(own) == set(ours.nodes) and own[-1] == "USA"
    assert own.index("Michelle") < own.index("Chicago")  # Chicago's chunk "c" also names Kenya, not ours
    assert own_names(ours, g, sizes, top=2) == own[:2]
    from tiny_graphrag.reports.generate import community_title

    assert community_title("The Community", own) == ", ".join(own[:2]) + f" and {own[2]}"
