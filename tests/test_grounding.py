"""Map points grounded in their source report (search/grounding.py), on hand-made unit vectors."""

from __future__ import annotations

import numpy as np
import pytest

from tiny_graphrag.search.context import KeyPoint
from tiny_graphrag.search.grounding import ground_points

SKIP = "(invalid)"


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


# Three reports: 0 is about the question, 1 half so, 2 not at all.
QUERY = unit(1, 0, 0)
REPORTS = {0: unit(1, 0, 0), 1: unit(1, 1, 0), 2: unit(0, 0, 1)}
TEXTS = {"about report 2": unit(0, 0.1, 1), "about report 0": unit(1, 0, 0.1), SKIP: unit(0, 1, 0)}


def embed(texts: list[str]) -> np.ndarray:
    assert SKIP not in texts  # an invalid answer's placeholder is never embedded
    return np.stack([TEXTS[t.split(" [")[0]] for t in texts])


def ground(points, weight=0.75, batches=((0, 1, 2),)):
    return ground_points(points, [tuple(b) for b in batches], REPORTS, QUERY, embed, weight=weight, skip=SKIP)


def test_an_uncited_point_is_grounded_in_the_batch_report_nearest_its_text():
    (p0, g0), (p2, g2) = ground([KeyPoint("about report 0", 0, 0), KeyPoint("about report 2", 100, 0)])
    assert (g0.report, g0.cited, g2.report, g2.cited) == (0, False, 2, False)
    # The model scored the on-topic point 0 and the off-topic one 100; grounded, the order flips.
    assert p0.score > p2.score and (p0.model_score, p2.model_score) == (0, 100)


def test_a_cited_report_wins_over_the_nearest_one_and_the_most_relevant_citation_counts():
    [(p, g)] = ground([KeyPoint("about report 2 [Data: Reports (2, 1)]", 50, 0)])
    assert g.cited and g.report == 1  # both cited; 1 is nearer the question than 2
    assert g.relevance == pytest.approx(float(REPORTS[1] @ QUERY))  # report 0 is the best: relevance / 1.0
    # A citation outside the point's batch is not its source: the nearest batch report is.
    [(_, g)] = ground([KeyPoint("about report 2 [Data: Reports (0)]", 50, 0)], batches=((1, 2),))
    assert (g.report, g.cited) == (2, False)


@pytest.mark.parametrize("weight", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_importance_mixes_the_model_score_and_the_relevance(weight):
    pairs = ground([KeyPoint("about report 0", 40, 0), KeyPoint("about report 2", 40, 0)], weight=weight)
    (p0, g0), (p2, g2) = pairs
    if weight > 0:  # at 0 nothing is embedded: the points keep the model's scores
        assert g0.relevance == pytest.approx(1.0) and g2.relevance == pytest.approx(0.0, abs=1e-6)
    assert p0.score == round(100 * ((1 - weight) * 0.4 + weight * 1.0))
    assert p2.score == round(100 * (1 - weight) * 0.4)
    assert (p0.score > p2.score) == (weight > 0)  # weight 0: the model's word alone


def test_an_invalid_map_answer_keeps_score_zero_and_is_not_embedded():
    [(p, g)] = ground([KeyPoint(SKIP, 0, 0)])
    assert (p.score, p.model_score, g.report) == (0, 0, None)


def test_a_point_from_a_batch_without_report_vectors_has_no_source():
    [(p, g)] = ground([KeyPoint("about report 0", 80, 0)], batches=((7,),))
    assert g.report is None and g.relevance == 0.0 and p.score == round(100 * 0.25 * 0.8)
