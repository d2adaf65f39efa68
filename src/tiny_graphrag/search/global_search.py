"""Global search (GraphRAG paper §3.1.6): map community reports to scored key points, reduce to an answer.

- Level: the one asked for, else the deepest level whose reports fit in `max_map_chunks` map
  calls. Deeper levels hold more specific reports (the paper's C2/C3 were the most
  comprehensive), but each map call costs seconds to minutes on a local CPU model, so the
  default buys specificity only while the call count stays bounded; on a large graph it falls
  back to the root level (C0), which the paper found nearly as good at a fraction of the cost.
- Map: the level's reports are shuffled and packed into chunks of `map_chunk_tokens`; one call
  per chunk returns key points with 0-100 helpfulness scores, constrained by a JSON schema. An
  invalid answer becomes one score-0 point (logged), never an exception.
- Reduce: score-0 points are dropped, the rest sorted by score and added until the reduce
  budget is full; one more call writes the answer citing reports. Calls = map chunks + 1.
- Pre-filter (optional): keep only the reports most similar to the query (embedding cosine),
  cutting map calls on large graphs; `details` reports how many calls it saved.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..records import Report
from .config import GlobalConfig
from .context import KeyPoint, MapBatch, pack_report_batches
from .vectors import VectorIndex

log = logging.getLogger(__name__)

INVALID_MAP_ANSWER = "(the model's answer for this batch was not valid JSON; ignored)"


@dataclass(frozen=True)
class MapAnswer:
    batch: int
    points: tuple[KeyPoint, ...]
    valid: bool
    raw: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


def parse_map_answer(text: str, batch: int) -> tuple[list[KeyPoint], bool]:
    """Key points from a map answer; anything unusable degrades to one score-0 point."""
    data = None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        m = re.search(r"\{.*\}", text or "", re.DOTALL)  # prose around a JSON object
        if m:
            try:
                data = json.loads(m.group(0))
            except json.JSONDecodeError:
                data = None
    raw_points = data.get("points") if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(raw_points, list):
        return [KeyPoint(INVALID_MAP_ANSWER, 0, batch)], False
    points = []
    for p in raw_points:
        if not isinstance(p, dict):
            continue
        desc = p.get("description", p.get("answer"))
        if not isinstance(desc, str) or not desc.strip():
            continue
        try:
            score = int(round(float(p.get("score", 0))))
        except (TypeError, ValueError):
            score = 0
        points.append(KeyPoint(desc.strip(), max(0, min(100, score)), batch))
    if not points:
        return [KeyPoint(INVALID_MAP_ANSWER, 0, batch)], False
    return points, True


class GlobalIndex:
    """The report table of an index: short ids, levels, vectors for the optional pre-filter."""

    def __init__(self, reports: Sequence[Report], report_vectors: VectorIndex | None = None):
        self.reports = list(reports)
        # A report's citation id is its row in the index's report table: the same in every search.
        self.id_of: dict[str, int] = {r.community_id: i for i, r in enumerate(self.reports)}
        self.vectors = report_vectors
        self._batch_counts: dict[tuple, int] = {}

    @property
    def levels(self) -> list[int]:
        return sorted({r.level for r in self.reports})

    def at_level(self, level: int) -> list[tuple[int, Report]]:
        return [(self.id_of[r.community_id], r) for r in self.reports if r.level == level]

    def choose_level(self, config: GlobalConfig, chunk_tokens: int, count, counter_name: str) -> int:
        """The deepest level needing at most `max_map_chunks` map calls, else the root level."""
        levels = self.levels
        best = levels[0]
        for level in levels:
            key = (level, chunk_tokens, counter_name)
            if key not in self._batch_counts:
                self._batch_counts[key] = len(pack_report_batches(self.at_level(level), chunk_tokens, count, seed=None))
            if self._batch_counts[key] <= config.max_map_chunks:
                best = level
        return best

    def prefilter(
        self, reports: list[tuple[int, Report]], query_vector: np.ndarray | None, config: GlobalConfig
    ) -> list[tuple[int, Report]]:
        """The reports most similar to the query, when a pre-filter is configured."""
        if (config.prefilter_top is None and config.prefilter_min_similarity is None) or query_vector is None:
            return reports
        if self.vectors is None or len(self.vectors) == 0:
            log.warning("the index has no report vectors: the global pre-filter is skipped")
            return reports
        sims = dict(zip(self.vectors.ids, self.vectors.similarities(query_vector)))
        scored = sorted(reports, key=lambda rr: (-float(sims.get(rr[1].community_id, -1.0)), rr[0]))
        if config.prefilter_min_similarity is not None:
            scored = [rr for rr in scored if sims.get(rr[1].community_id, -1.0) >= config.prefilter_min_similarity]
        if config.prefilter_top is not None:
            scored = scored[: config.prefilter_top]
        return scored


def run_map(llm, batches: Sequence[MapBatch], query: str, config: GlobalConfig) -> list[MapAnswer]:
    """One constrained call per batch."""
    from .prompts import map_messages, map_schema

    schema = map_schema(config.max_points)
    answers = []
    for i, batch in enumerate(batches):
        out = llm.complete(map_messages(batch.text, query), schema=schema, max_tokens=config.map_max_tokens,
                           temperature=0.0)
        points, valid = parse_map_answer(out.text, i)
        if not valid:
            log.warning("map answer %d was not valid JSON (finish_reason=%s): %.120r", i, out.finish_reason, out.text)
        answers.append(MapAnswer(i, tuple(points), valid, out.text, out.prompt_tokens, out.completion_tokens))
    return answers
