"""Map points ranked by how near their own words are to the question (search/grounding.py), on
hand-made unit vectors."""

from __future__ import annotations

import numpy as np
import pytest

from tiny_graphrag.search.context import KeyPoint
from tiny_graphrag.search.grounding import ground_points

SKIP = "(invalid)"


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


QUERY = unit(1, 0, 0)
# A point about the question, one half about it, one not at all (cosines 1, 0.71, 0).
TEXTS = {"on topic": unit(1, 0, 0), "half": unit(1, 1, 0), "off topic": unit(0, 0, 1)}
embedded: list[str] = []


def embed(texts: list[str]) -> np.ndarray:
    embedded.extend(texts)
    assert SKIP not in texts  # an invalid answer's placeholder is never embedded
    return np.stack([TEXTS[t] for t in texts])


def ground(points, weight=0.75):
    return ground_points(points, QUERY, embed, weight=weight, skip=SKIP)


def test_a_finding_the_model_left_out_outranks_an_off_topic_one_it_chose():
    """A 0.5B map model chose findings by position and scored them as it liked: the finding it
    did not choose (vote 0) but that is about the question ranks first once grounded."""
    (p_on, g_on), (p_off, g_off) = ground(
        [
            KeyPoint("on topic [Data: Reports (3)]", 0, 0, report=3),
            KeyPoint("off topic [Data: Reports (4)]", 100, 0, report=4),
        ]
    )
    assert p_on.score > p_off.score and (p_on.model_score, p_off.model_score) == (0, 100)
    assert (g_on.similarity, g_on.relevance) == (pytest.approx(1.0), pytest.approx(1.0))
    assert g_off.relevance == pytest.approx(0.0, abs=1e-6)
    assert p_on.report == 3  # what the point quotes is kept


@pytest.mark.parametrize("weight", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_importance_mixes_the_model_score_and_the_relevance(weight):
    embedded.clear()
    points = [
        KeyPoint("half", 40, 0),
        KeyPoint("on topic", 40, 0),
        KeyPoint("off topic", 40, 1),
        KeyPoint("off topic", 10, 1),
    ]  # cosines 0.71, 1, 0, 0: the median is 0.35
    (p_half, g_half), (p_on, _), (p_off, _), _ = ground(points, weight=weight)
    if weight == 0:  # GraphRAG's ranking: nothing is embedded, the points keep the model's scores
        assert embedded == [] and g_half is None and (p_half.score, p_on.score, p_off.score) == (40, 40, 40)
        return
    median = float(TEXTS["half"] @ QUERY) / 2
    relevance = (float(TEXTS["half"] @ QUERY) - median) / (1.0 - median)
    assert g_half.relevance == pytest.approx(relevance)
    assert p_half.score == round(100 * ((1 - weight) * 0.4 + weight * relevance))
    assert p_on.score == round(100 * ((1 - weight) * 0.4 + weight))
    assert p_off.score == round(100 * (1 - weight) * 0.4)  # under the median: relevance 0
    assert p_on.score > p_half.score > p_off.score


def test_relevance_runs_from_the_median_to_the_best_point():
    """ "What are the main themes?" is far from every sentence: the nearest still counts 1, and
    what is no nearer than the median of the candidates counts 0."""
    [(_, g_half), (_, g_off)] = ground([KeyPoint("half", 0, 0), KeyPoint("off topic", 0, 0)])
    assert g_half.relevance == pytest.approx(1.0) and g_half.similarity == pytest.approx(float(TEXTS["half"] @ QUERY))
    assert g_off.relevance == pytest.approx(0.0, abs=1e-6)
    [(_, g)] = ground([KeyPoint("half", 0, 0)])  # one candidate: it is the best
    assert g.relevance == 1.0


def test_an_invalid_map_answer_keeps_score_zero_and_is_not_embedded():
    [(p, g)] = ground([KeyPoint(SKIP, 0, 0)])
    assert (p.score, p.model_score, g) == (0, 0, None)
    [(p, g), (q, h)] = ground([KeyPoint(SKIP, 0, 0), KeyPoint("on topic", 50, 1)])
    assert g is None and p.score == 0 and h.relevance == pytest.approx(1.0)


@pytest.mark.parametrize("median, relevance", [(None, 0.0), (0.0, 0.71)])
def test_relevance_starts_at_a_given_median(median, relevance):
    """Candidates picked for being near the question are not a fair sample: their own median made
    a half-relevant point count as irrelevant; the index's median finding (given) does not."""
    points = [KeyPoint("half", 0, 0), KeyPoint("on topic", 0, 0), KeyPoint("half", 0, 1)]  # median 0.71
    (_, g_half), (_, g_on), _ = ground_points(points, QUERY, embed, weight=0.75, skip=SKIP, median=median)
    assert g_on.relevance == pytest.approx(1.0)
    assert g_half.relevance == pytest.approx(relevance, abs=0.01)
