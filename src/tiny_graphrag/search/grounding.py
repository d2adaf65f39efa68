"""Global search's map points ranked by how near their own words are to the question, not only by
the map model's word.

A 0.5B map model's choices and 0-100 scores do not tell relevant findings from irrelevant ones: it
chose findings by their position in the batch and scored them all 0 (or, writing its own points,
all 80-100), whatever the question (bench/RESULTS.md, "Global search and its map step"). Every
point is a finding's own words (or the text a backend wrote for it), so the index can say how near
it is to the question. Every finding of the mapped batches is therefore a candidate: the model's
vote is its score for the findings it chose and 0 for the others, and

    importance = 100 * ((1 - w) * vote / 100 + w * relevance)

where relevance places the point's query cosine between the candidates' median (0) and the best
(1): relative, because "What are the main themes?" is far from every sentence of any corpus, and
from the median, because a corpus's sentences all share some of a question's words (on the demo
every finding was 0.29-0.43 near "the main themes of Obama's presidency", so over the best alone
all of them counted two thirds or more, and 21 points crowded a 0.5B reduce). w = 0 is
GraphRAG's ranking: only the chosen findings, by the model's score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from tiny_graphrag.citations import strip_citations
from tiny_graphrag.search.context import KeyPoint


@dataclass(frozen=True)
class Grounding:
    """Why a point got its importance."""

    similarity: float  # the point's query cosine
    relevance: float  # 0..1: that cosine from the candidates' median (0) to the best (1)


def ground_points(
    points: Sequence[KeyPoint],
    query_vector: np.ndarray | None,  # needed when weight > 0
    embed: Callable[[list[str]], np.ndarray],
    *,
    weight: float,
    skip: str,
    median: float | None = None,
) -> list[tuple[KeyPoint, Grounding | None]]:
    """Each point with its importance as `score` (the model's vote kept as `model_score`); `skip`
    is the placeholder of an invalid map answer, which keeps score 0 and no grounding. `median`:
    the zero of relevance when the candidates are not a fair sample of the corpus (dynamic
    selection mapped only the findings nearest the question): the median over every finding."""
    out: list[tuple[KeyPoint, Grounding | None]] = [(replace(p, model_score=p.score), None) for p in points]
    real = [i for i, p in enumerate(points) if p.description != skip]
    if not real or weight <= 0:
        return out
    vectors = np.asarray(embed([strip_citations(points[i].description) for i in real]), dtype=np.float32)
    cosine = dict(zip(real, (max(0.0, float(c)) for c in vectors @ np.asarray(query_vector, dtype=np.float32))))
    best = max(cosine.values())
    median = float(np.median(list(cosine.values()))) if median is None else median
    for i, c in cosine.items():
        relevance = min(1.0, max(0.0, (c - median) / (best - median))) if best > median else float(best > 0)
        importance = int(round(100 * ((1 - weight) * points[i].score / 100 + weight * relevance)))
        out[i] = (replace(out[i][0], score=importance), Grounding(c, relevance))
    return out
