"""Global search's map points ranked by the report they came from, not only by the map model's word.

A 0.5B map model's 0-100 scores do not tell relevant reports from irrelevant ones: it scored
points from unrelated reports 80-100 and, on the demo, every point of the one report about
Obama's policies 0, so the reduce saw only the unrelated points (bench/RESULTS.md, "Global
search and its map step"). What the index does know is how similar each report is to the
question (its report vectors). So a point's importance mixes the two:

    importance = 100 * ((1 - w) * model_score / 100 + w * relevance)

where relevance is the query cosine of the point's source report, scaled by the best cosine
among the mapped reports (so the most on-topic report counts 1: "What are the main themes?" is
only 0.0-0.2 similar to any report, yet every report is about it, so no absolute similarity
can say what is relevant). The source is the report the point cites when it cites one of its
batch, else the batch's report nearest to the point's text (an uncited point still came from
one of the reports it was shown). A point the model
invented from the question cites, or sits nearest to, a report that is not about the question,
and ranks low however the model scored it. w = 0 is GraphRAG's ranking.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

import numpy as np

from ..citations import parse_citations, strip_citations
from .context import KeyPoint


@dataclass(frozen=True)
class Grounding:
    """Why a point got its importance: its source report and that report's scaled relevance."""

    report: int | None  # the report id the point is grounded in (None: not groundable)
    cited: bool  # the point cited it (else: nearest to the point's text)
    similarity: float  # the source report's query cosine
    relevance: float  # 0..1, that cosine over the best mapped report's


def point_source(point_vector: np.ndarray, cited: Sequence[int], batch: Sequence[int],
                 report_vectors: Mapping[int, np.ndarray], query_cos: Mapping[int, float]) -> tuple[int | None, bool]:
    """The batch report a point cites (of several, the one most like the query), else the
    batch report nearest to the point's text; (report id or None, whether it was cited)."""
    in_batch = [r for r in cited if r in batch and r in report_vectors]
    if in_batch:
        return max(in_batch, key=lambda r: query_cos.get(r, 0.0)), True
    candidates = [r for r in batch if r in report_vectors]
    if not candidates:
        return None, False
    sims = [float(np.dot(report_vectors[r], point_vector)) for r in candidates]
    return candidates[int(np.argmax(sims))], False


def ground_points(
    points: Sequence[KeyPoint],
    batches: Sequence[Sequence[int]],
    report_vectors: Mapping[int, np.ndarray],
    query_vector: np.ndarray,
    embed: Callable[[list[str]], np.ndarray],
    *,
    weight: float,
    skip: str,
) -> list[tuple[KeyPoint, Grounding]]:
    """Each point with its importance as `score` (the model's score kept as `model_score`).

    `batches[i]` are the report ids map call i was shown; `skip` is the placeholder text of an
    invalid map answer, which keeps score 0 (there is no point to ground)."""
    query_cos = {r: max(0.0, float(np.dot(v, query_vector))) for r, v in report_vectors.items()}
    best = max(query_cos.values(), default=0.0)
    real = [i for i, p in enumerate(points) if p.description != skip]
    vectors = embed([strip_citations(points[i].description) for i in real]) if real and weight > 0 else None
    out: list[tuple[KeyPoint, Grounding]] = []
    row = {i: n for n, i in enumerate(real)}
    for i, p in enumerate(points):
        if i not in row or vectors is None:
            out.append((replace(p, model_score=p.score), Grounding(None, False, 0.0, 0.0)))
            continue
        cited = parse_citations(p.description)["reports"]
        report, was_cited = point_source(np.asarray(vectors[row[i]], dtype=np.float32), cited, batches[p.batch],
                                         report_vectors, query_cos)
        similarity = query_cos.get(report, 0.0) if report is not None else 0.0
        relevance = similarity / best if best > 0 else 0.0
        importance = int(round(100 * ((1 - weight) * p.score / 100 + weight * relevance)))
        out.append((replace(p, score=importance, model_score=p.score),
                    Grounding(report, was_cited, similarity, relevance)))
    return out
