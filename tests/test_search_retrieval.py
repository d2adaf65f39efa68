"""Score fusion against hand-computed scores; local search's PageRank seeds and text prior, and
queries that the keyword index cannot use, on the small hand-made index with the real MiniLM."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_search_fixtures import build_test_index

from tiny_graphrag.search.config import FusionConfig, LocalConfig
from tiny_graphrag.search.engine import QueryEngine
from tiny_graphrag.search.hybrid import score_fusion


# ---- score fusion (own logic: no index needed) -----------------------------------------------
def test_score_fusion_matches_hand_computed_scores():
    dense = [("a", 0.9), ("b", 0.5), ("c", 0.1)]
    keyword = [("c", 12.0), ("a", 4.0), ("d", 2.0)]
    fused = dict(score_fusion([dense, keyword], [1.0, 0.5]))
    # min-max per ranking: dense a 1, b 0.5, c 0; keyword c 1, a 0.2, d 0
    assert fused == pytest.approx({"a": 1.0 + 0.5 * 0.2, "b": 0.5, "c": 0.5 * 1.0, "d": 0.0})
    assert [d for d, _ in score_fusion([dense, keyword], [1.0, 0.5])] == ["a", "b", "c", "d"]


def test_flat_keyword_scores_leave_the_dense_order():
    dense = [("x", 0.8), ("y", 0.7), ("z", 0.2)]
    flat = [("z", 3.0), ("y", 3.0), ("q", 3.0)]
    order = [d for d, _ in score_fusion([dense, flat], [1.0, 5.0])]
    assert order[:3] == ["x", "y", "z"]  # however heavy its weight, a flat ranking changes nothing
    with pytest.raises(ValueError):
        score_fusion([dense], [1.0, 1.0])
    with pytest.raises(ValueError):
        score_fusion([dense], [-1.0])
    assert score_fusion([[], []], [1.0, 1.0]) == []


def test_bad_settings_name_the_field():
    with pytest.raises(ValueError, match="method"):
        FusionConfig(method="sum")
    with pytest.raises(ValueError, match="seed_by"):
        LocalConfig(seed_by="degree")
    with pytest.raises(ValueError, match="passage_weight"):
        LocalConfig(passage_weight=-1)


# ---- on the hand-made index ------------------------------------------------------------------
@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from tiny_graphrag.backends.embed import Embedder

    embedder = Embedder("all-MiniLM-L6-v2", device="cpu")
    qe = QueryEngine(build_test_index(tmp_path_factory.mktemp("retrieval") / "idx", embedder), embedder=embedder)
    yield qe
    qe.close()


def test_score_fusion_in_the_hybrid_ranking(engine):
    q = "Where is Bletchley Park located?"
    v = engine.index.embed_query(q)
    ranked = engine.index.hybrid.rank(q, v, fusion=FusionConfig(method="score", keyword_weight=0.5))
    expected = score_fusion([list(ranked.dense), list(ranked.keyword)], [1.0, 0.5])
    assert list(ranked.fused) == expected
    assert ranked.ids()[0] == ranked.ids("keyword")[0]  # the one document naming it, first everywhere


def test_entity_seeds_by_similarity_are_the_query_entity_cosines(engine):
    q = "Who worked with Charles Babbage?"
    v = engine.index.embed_query(q)
    linked = engine.index.local.link(q, v, LocalConfig())
    keys = [e.key for e in linked]
    ids, matrix = engine.store.vectors("entities")
    reference = [float(matrix[ids.index(k)] @ v) for k in keys]
    assert engine.index.linker.similarity(v, keys) == pytest.approx(reference, abs=1e-5)
    seeds = engine.index.local._entity_seeds(linked, v, LocalConfig(seed_by="similarity"))
    assert sum(seeds.values()) == pytest.approx(1.0)
    gi = engine.index.graph_index
    raw = {k: max(s, 1e-6) / np.sqrt(gi.chunk_count[gi.pos[k]]) for k, s in zip(keys, reference)}
    assert seeds == pytest.approx({k: w / sum(raw.values()) for k, w in raw.items()})


def test_a_dominant_text_prior_gives_the_text_order(engine):
    q = "Who worked with Charles Babbage?"
    v = engine.index.embed_query(q)
    base = LocalConfig(keep_text_top=0)
    walk = engine.index.local.retrieve(q, v, base)
    prior = engine.index.local.retrieve(q, v, dataclasses.replace(base, prior_weight=1e6))
    text = [c for c, _ in walk.hybrid.fused]
    ranked_by_prior = [c for c, _ in prior.chunks]
    assert ranked_by_prior[: len(text)] == text
    assert [c for c, _ in walk.chunks][: len(walk.graph_chunks)] == [c for c, _ in walk.graph_chunks]


@pytest.mark.parametrize(
    "query",
    [
        "the of and",
        "?!",
        "...",
        '"NEAR( AND OR *',
        "NOT -x:y ^",
        "col:umn {a b}",
        "what is it?",
    ],
)
def test_queries_the_keyword_index_cannot_use_never_raise(engine, query):
    v = engine.index.embed_query(query)
    ranked = engine.index.hybrid.rank(query, v)
    assert len(ranked.dense) > 0  # the dense ranking still answers
    cand = engine.local_candidates(query, v)
    assert [c for c, _ in cand.chunks]  # never an empty candidate list
    r = engine.naive_search(query, only_context=True)
    assert r.mode == "naive"


def test_the_tuning_bench_picks_the_fusion_with_the_best_worst_margin():
    from bench import retrieval_eval as rev
    from bench import retrieval_tuning as rt
    from tiny_graphrag.search.hybrid import Ranked

    # Dense finds q1's gold passage only at rank 3, keyword puts it first; q2 the other way round.
    questions = [rev.Question("q1", "a", ("g1",), ""), rev.Question("q2", "b", ("g2",), "")]
    ranked = [
        Ranked((("x", 0.9), ("y", 0.8), ("g1", 0.7)), (("g1", 9.0), ("z", 1.0)), ()),
        Ranked((("g2", 0.9), ("y", 0.2)), (("w", 5.0), ("v", 4.9), ("g2", 4.8)), ()),
    ]
    p = rt.Prepared(questions, np.zeros((2, 3)), ranked, [[], []], lambda ids: list(ids))
    idx = np.arange(2)
    chosen, info = rt.choose_fusion([(None, p, idx)])

    def margin(f):
        rec = rt.recalls(rt.fused_rankings(p, f)[1], questions)
        dense = rt.recalls([r.ids("dense") for r in ranked], questions)
        kw = rt.recalls([r.ids("keyword") for r in ranked], questions)
        return min(rec[k].mean() - max(dense[k].mean(), kw[k].mean()) for k in rev.KS)

    assert info["tried"] == len(rt.fusion_grid())
    assert margin(chosen) == max(margin(f) for f in rt.fusion_grid())
    assert margin(chosen) >= margin(FusionConfig(method="rrf", k=60, flat_keyword_backoff=None))


@pytest.mark.parametrize(
    "top,fifth,backoff,want",
    [
        (10.0, 10.0, 2.0, 0.0),  # flat: the best is no better than the fifth
        (12.0, 10.0, 2.0, 0.1),  # 1.2x: a tenth of the weight at backoff 2
        (30.0, 10.0, 2.0, 1.0),  # 3x: the full weight
        (50.0, 10.0, 2.0, 1.0),  # capped at 1
    ],
)
def test_a_flat_keyword_ranking_backs_off_to_dense(top, fifth, backoff, want):
    from tiny_graphrag.search.hybrid import peak_weight

    scores = [top - (top - fifth) * i / 4 for i in range(5)] + [fifth / 2]  # descending, fifth at rank 5
    assert peak_weight(scores, backoff) == pytest.approx(want)
    assert peak_weight([top, fifth], backoff) == 1.0  # under five hits: a few clear ones


def test_flat_keyword_backoff_keeps_the_dense_order_when_bm25_is_flat():
    from tiny_graphrag.search.hybrid import fuse

    dense = [("a", 0.9), ("b", 0.85), ("c", 0.8), ("d", 0.75), ("e", 0.5)]
    flat = [("e", 5.04), ("d", 5.03), ("c", 5.02), ("b", 5.01), ("a", 5.0)]  # reversed, but flat
    peaked = [("d", 20.0), ("e", 5.03), ("c", 5.02), ("b", 5.01), ("a", 5.0)]
    plain = FusionConfig(method="score", flat_keyword_backoff=None)
    backoff = FusionConfig(method="score", flat_keyword_backoff=2.0)
    assert [c for c, _ in fuse(dense, flat, plain)][0] != "a"  # min-max stretched the flat scores
    assert [c for c, _ in fuse(dense, flat, backoff)] == ["a", "b", "c", "d", "e"]
    assert [c for c, _ in fuse(dense, peaked, backoff)][0] == "d"  # a clear keyword hit still counts
    with pytest.raises(ValueError, match="flat_keyword_backoff"):
        FusionConfig(flat_keyword_backoff=0)
