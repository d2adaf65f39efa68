"""Dynamic community selection (search/selection.py): the walk down the hierarchy on hand-made
scores, then end to end on the small search index with the real embedder and a FakeLLM."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _fakes import LARGE, FakeLLM
from test_search_engine import citing_responder
from test_search_fixtures import build_test_index

from tiny_graphrag.cli import main
from tiny_graphrag.cli.commands import global_config
from tiny_graphrag.cli.parser import build_parser
from tiny_graphrag.errors import ConfigError, InputError
from tiny_graphrag.records import Finding, Report
from tiny_graphrag.search.config import GlobalConfig
from tiny_graphrag.search.context import MapBatch
from tiny_graphrag.search.engine import QueryEngine
from tiny_graphrag.search.prompts import NO_DATA_ANSWER
from tiny_graphrag.search.report_index import GlobalIndex
from tiny_graphrag.search.selection import (
    KEPT,
    NOT_RELEVANT,
    OVER_BUDGET,
    PARENT_NOT_RELEVANT,
    REPLACED,
    TOO_DEEP,
    report_similarities,
    select_reports,
)

# A three-level hierarchy: a -> (a1 -> a1x, a2), b -> (b1), c, and d-g far from every question.
TREE = {"a": ("a1", "a2"), "a1": ("a1x",), "b": ("b1",)}
LEVEL = {"a": 0, "b": 0, "c": 0, "a1": 1, "a2": 1, "b1": 1, "a1x": 2, "d": 0, "e": 0, "f": 0, "g": 0}


def _globals() -> GlobalIndex:
    reports = [Report(cid, LEVEL[cid], f"report {cid}", f"summary of {cid}", 5.0, "") for cid in LEVEL]
    return GlobalIndex(reports, children=TREE)


def _pack(per_batch: int):
    """Batches of `per_batch` reports, 100 tokens a report."""

    def pack(reports):
        ids = [rid for rid, _ in reports]
        return [
            MapBatch("", tuple(ids[i : i + per_batch]), 100 * len(ids[i : i + per_batch]))
            for i in range(0, len(ids), per_batch)
        ]

    return pack


def _select(
    sims: dict[str, float],
    *,
    calls: int = 3,
    cutoff: float = 0.5,
    max_level=None,
    per_batch: int = 10,
    share: float = 1.0,
    level_tokens: int = 10**6,
):
    g = _globals()
    similarity = {g.id_of[cid]: s for cid, s in sims.items()}
    cfg = GlobalConfig(dynamic_map_calls=calls, dynamic_cutoff=cutoff, dynamic_share=share)
    sel = select_reports(g, similarity, cfg, max_level=max_level, pack=_pack(per_batch), level_tokens=level_tokens)
    why = {g.reports[c.report].community_id: c.why for c in sel.considered}
    return [r.community_id for _, r in sel.kept], why, sel


# The median score is 0.3 and the best 0.95, so relevance 0.5 <=> score 0.625.
SCORES = {"a": 0.7, "b": 0.2, "c": 0.65, "a1": 0.8, "a2": 0.3, "b1": 0.95, "a1x": 0.9} | dict.fromkeys("defg", 0.05)


def test_a_relevant_parent_gives_way_to_its_relevant_children_and_an_irrelevant_one_rules_out_its_own():
    kept, why, _ = _select(SCORES)
    # a -> a1 -> a1x descends to the most specific relevant report; a2 is not relevant.
    assert why["a"] == why["a1"] == REPLACED and why["a1x"] == KEPT and why["a2"] == NOT_RELEVANT
    # b is not relevant: its child b1 is never kept, however near it is.
    assert why["b"] == NOT_RELEVANT and why["b1"] == PARENT_NOT_RELEVANT
    assert why["c"] == KEPT  # relevant, no children: kept itself
    assert kept == ["a1x", "c"]  # best first


def test_a_lone_root_is_judged_by_its_children_not_ruled_out_with_them():
    """A tree's one top summary is about everything, so never nearer than the median: ruling it out
    ruled out the whole tree, and a question with near summaries below got no map call."""
    g = GlobalIndex(
        [Report(cid, lvl, f"report {cid}", "", 5.0, "") for cid, lvl in {"root": 0, "x": 1, "y": 1, "z": 1}.items()],
        children={"root": ("x", "y", "z")},
    )
    similarity = {g.id_of["root"]: 0.15, g.id_of["x"]: 0.3, g.id_of["y"]: 0.2, g.id_of["z"]: 0.1}
    sel = select_reports(g, similarity, GlobalConfig(), max_level=None, pack=_pack(10), level_tokens=10**6)
    why = {g.reports[c.report].community_id: c.why for c in sel.considered}
    assert why["root"] == REPLACED and why["x"] == KEPT and why["z"] == NOT_RELEVANT


def test_a_relevant_report_without_relevant_children_is_kept_itself():
    kept, why, _ = _select({**SCORES, "a1": 0.35, "a2": 0.3, "a1x": 0.1})
    assert why["a"] == KEPT and why["a1"] == why["a2"] == NOT_RELEVANT and why["a1x"] == PARENT_NOT_RELEVANT
    assert kept == ["a", "c"]


@pytest.mark.parametrize("calls, per_batch, kept", [(1, 1, ["a1x"]), (2, 1, ["a1x", "c"]), (1, 2, ["a1x", "c"])])
def test_the_best_reports_fill_the_map_budget_and_the_rest_are_over_it(calls, per_batch, kept):
    got, why, _ = _select(SCORES, calls=calls, per_batch=per_batch)
    assert got == kept
    assert {cid for cid, w in why.items() if w == OVER_BUDGET} == {"a1x", "c"} - set(kept)


@pytest.mark.parametrize("share, kept", [(0.2, ["a1x", "c"]), (0.1, ["a1x"]), (0.01, ["a1x"])])
def test_the_map_budget_is_also_a_share_of_a_level_and_the_best_report_is_always_read(share, kept):
    # a whole level is 1,000 tokens, a report 100: a share of 0.1 holds one, 0.01 none but the best
    got, why, _ = _select(SCORES, share=share, level_tokens=1000)
    assert got == kept and (why["c"] == KEPT) == ("c" in kept)


def test_the_deepest_level_bounds_the_walk():
    kept, why, _ = _select(SCORES, max_level=1)
    assert why["a1x"] == TOO_DEEP and why["a1"] == KEPT and kept == ["a1", "c"]
    kept, why, _ = _select(SCORES, max_level=0)
    assert kept == ["a", "c"] and why["a1"] == TOO_DEEP


def test_a_question_no_report_is_near_keeps_nothing_and_names_the_closest():
    low = {cid: s / 10 for cid, s in SCORES.items()}  # best 0.095 < min_similarity 0.15
    kept, why, sel = _select(low)
    assert kept == [] and KEPT not in why.values()
    assert [c.similarity for c in sel.closest(2)] == [0.095, 0.09]  # b1 first: near, though never kept


def test_every_report_is_considered_once_with_its_relevance():
    _, why, sel = _select(SCORES)
    assert sorted(why) == sorted(LEVEL) and len(sel.considered) == len(LEVEL)
    rel = {c.report: c.relevance for c in sel.considered}
    assert max(rel.values()) == 1.0 and min(rel.values()) == 0.0  # best = 1, median and below = 0


def test_report_similarity_is_the_best_of_the_report_and_its_findings():
    """Against a direct computation: max(cos(report vector), max cos(finding)), and the median finding."""
    rng = np.random.default_rng(0)
    texts = {"one": "alpha", "two": "beta", "three": "gamma"}
    vec = {t: v / np.linalg.norm(v) for t, v in zip([*texts.values(), "q", "r0", "r1"], rng.normal(size=(6, 8)))}
    reports = [
        Report("r0", 0, "t0", "s0", 1.0, "", findings=(Finding("f", "alpha"), Finding("f", "beta"))),
        Report("r1", 0, "t1", "gamma", 1.0, ""),  # no findings: its summary is what is mapped
    ]
    from tiny_graphrag.search.vectors import VectorIndex

    g = GlobalIndex(reports, VectorIndex(["r0", "r1"], np.stack([vec["r0"], vec["r1"]])))
    got = report_similarities(g, vec["q"], lambda ts: np.stack([vec[t] for t in ts]))
    q = vec["q"]
    assert got[0] == pytest.approx(max(vec["r0"] @ q, vec["alpha"] @ q, vec["beta"] @ q), abs=1e-6)
    assert got[1] == pytest.approx(max(vec["r1"] @ q, vec["gamma"] @ q), abs=1e-6)


@pytest.mark.parametrize(
    "bad",
    [
        {"dynamic_map_calls": 0},
        {"dynamic_map_calls": True},
        {"dynamic_cutoff": 1.5},
        {"dynamic_share": 0},
    ],
)
def test_invalid_selection_settings_name_the_field(bad):
    with pytest.raises(ConfigError, match=next(iter(bad))):
        GlobalConfig(**bad)


# ---- end to end ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def index(tmp_path_factory, embedder):
    return build_test_index(tmp_path_factory.mktemp("selection") / "idx", embedder)


def test_global_search_maps_only_the_selected_reports_by_default(index, embedder):
    llm = FakeLLM(citing_responder, n_params=LARGE, n_ctx=4096)
    with QueryEngine(index, llm=llm, embedder=embedder) as qe:
        r = qe.global_search("Where did Alan Turing study and work?")
        reports = qe.index.globals.reports
    d = r.details
    kept = [c["report"] for c in d["considered"] if c["why"] == KEPT]
    assert len(d["considered"]) == len(reports)  # every report, with why it was kept or not
    assert {rep.id for rep in r.sources.reports} == set(kept)
    assert any("Turing" in reports[k].title or "Bletchley" in reports[k].title for k in kept)
    assert not any("Eiffel" in reports[k].title for k in kept)  # an unrelated community is left out
    assert r.llm_calls == d["map_chunks"] + 1 <= GlobalConfig().dynamic_map_calls + 1
    assert d["reports_mapped"] < len(reports)


def test_a_question_nothing_is_near_gets_no_model_call_and_names_the_closest_communities(index, embedder):
    llm = FakeLLM(citing_responder, n_params=LARGE)
    with QueryEngine(index, llm=llm, embedder=embedder) as qe:
        r = qe.global_search("What is the boiling point of mercury?")
    assert llm.calls == 0 and r.answer.startswith(NO_DATA_ANSWER)
    closest = [c["title"] for c in r.details["considered"][:3]]
    assert all(t in r.answer for t in closest)
    assert any("no report is near the question" in n for n in r.notes)


def test_a_level_that_does_not_exist_lists_the_levels(index, embedder):
    with QueryEngine(index, llm=FakeLLM(citing_responder, n_params=LARGE), embedder=embedder) as qe:
        with pytest.raises(InputError, match=r"levels are \[0, 1\]"):
            qe.global_search("Turing?", level=7)


def test_cli_selection_options_and_the_selection_shown(index, capsys):
    main(
        [
            "query",
            "global",
            "Where did Alan Turing study?",
            "--index",
            str(index),
            "--only-context",
            "--reader",
            "large",
        ]
    )
    out = capsys.readouterr().out
    assert "----- selection -----" in out and "kept" in out and "not relevant" in out
    main(
        ["query", "global", "Where did Alan Turing study?", "--index", str(index), "--only-context", "--json"]
        + ["--level", "0", "--reader", "large"]
    )
    d = json.loads(capsys.readouterr().out)["details"]
    assert d["level"] == 0 and {c["level"] for c in d["considered"] if c["why"] == KEPT} == {0}
    args = ["query", "global", "Turing?", "--index", str(index), "--only-context", "--json", "--map-calls", "1"]
    main([*args, "--reader", "large"])
    assert json.loads(capsys.readouterr().out)["details"]["map_chunks"] <= 1
    applied = global_config(GlobalConfig(), build_parser().parse_args([*args, "--over", "tree"]))
    assert (applied.dynamic_map_calls, applied.source) == (1, "tree")
    assert global_config(GlobalConfig(), build_parser().parse_args(args[:5])) == GlobalConfig()  # nothing given
    assert main(["query", "local", "Turing?", "--index", str(index), "--map-calls", "2"]) == 2
    assert "--map-calls: only for global search" in capsys.readouterr().err


def test_memo_embed_embeds_each_text_once_and_stops_remembering_at_its_cap():
    from tiny_graphrag.search.vectors import MemoEmbed

    calls: list[list[str]] = []

    def embed(texts):
        calls.append(list(texts))
        return np.stack([np.full(2, len(t), dtype=np.float32) for t in texts])

    memo = MemoEmbed(embed, max_texts=2)
    first = memo(["a", "bb", "a"])
    assert calls == [["a", "bb"]] and first[:, 0].tolist() == [1, 2, 1]
    assert memo(["bb", "a"])[:, 0].tolist() == [2, 1] and len(calls) == 1  # remembered
    assert memo(["ccc", "a"])[:, 0].tolist() == [3, 1] and calls[-1] == ["ccc"]
    memo(["ccc"])
    assert calls[-1] == ["ccc"] and len(memo.memo) == 2  # past the cap: embedded again, not kept
