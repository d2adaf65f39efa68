"""Reciprocal rank fusion against hand-computed scores, and the hybrid retriever's use of it."""

from __future__ import annotations

import pytest

from tiny_graphrag.search.hybrid import keyword_query, reciprocal_rank_fusion


def test_rrf_matches_hand_computed_scores():
    dense = ["a", "b", "c"]
    keyword = ["c", "a", "d"]
    fused = dict(reciprocal_rank_fusion([dense, keyword], k=60))
    # a: 1/(60+1) + 1/(60+2); b: 1/(60+2); c: 1/(60+3) + 1/(60+1); d: 1/(60+3)
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["d"] == pytest.approx(1 / 63)
    assert [d for d, _ in reciprocal_rank_fusion([dense, keyword])] == ["a", "c", "b", "d"]


def test_rrf_k_changes_the_order():
    # x is first in one ranking only; y is third in both. Small k favours a single top rank.
    r1, r2 = ["x", "p", "y"], ["q", "r", "y"]
    assert reciprocal_rank_fusion([r1, r2], k=0)[0][0] == "x"  # 1/1 > 1/3 + 1/3
    assert reciprocal_rank_fusion([r1, r2], k=60)[0][0] == "y"  # 2/63 > 1/61


def test_rrf_weights():
    fused = dict(reciprocal_rank_fusion([["a"], ["b"]], k=60, weights=[2.0, 0.5]))
    assert fused == {"a": pytest.approx(2 / 61), "b": pytest.approx(0.5 / 61)}
    # A zero weight ignores that ranking's order (its documents still appear, with score 0).
    assert [d for d, _ in reciprocal_rank_fusion([["a", "b"], ["b", "a"]], weights=[1, 0])] == ["a", "b"]


def test_rrf_ties_duplicates_limit_and_errors():
    # Ties keep first appearance; a repeated id counts once, at its best rank.
    assert [d for d, _ in reciprocal_rank_fusion([["a", "b"], ["b", "a"]])] == ["a", "b"]
    assert dict(reciprocal_rank_fusion([["a", "a", "b"]]))["a"] == pytest.approx(1 / 61)
    assert dict(reciprocal_rank_fusion([["a", "a", "b"]]))["b"] == pytest.approx(1 / 63)
    assert len(reciprocal_rank_fusion([["a", "b", "c"]], limit=2)) == 2
    assert reciprocal_rank_fusion([]) == [] and reciprocal_rank_fusion([[], []]) == []
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], weights=[1, 2])
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], k=-1)


def test_keyword_query_drops_stopwords_unless_nothing_is_left():
    assert keyword_query("What is the capital of France?") == "capital France"
    assert keyword_query("the of and") == "the of and"
    assert keyword_query("   ") == ""
