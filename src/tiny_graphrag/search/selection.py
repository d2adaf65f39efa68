"""Dynamic community selection for global search: which reports are worth a map call.

GraphRAG's dynamic selection rates the root level's reports against the question, descends only into the children of
relevant ones and maps what survives. Rating every report with a model is a call per report, which on our CPUs costs
more than the map step it saves, so the rating here is the index's own embeddings (no model call):

- A report's score is its best query cosine: the report's vector or one of its findings' (a report about many things is
  near a question through one finding, rarely as a whole).
- Relevance places that score between the scored reports' median (0) and the best (1): a broad question ("the main
  themes?") is far from every report, so only the ranking says which are nearer.
- From the root level down: a report under `dynamic_cutoff` is left out and so are its children (an irrelevant parent
  rules them out; a lone root, about everything, never is); a relevant report whose children include a relevant one is
  replaced by its children (more specific, the same entities), else kept.
- The kept reports, best first, fill the map budget: at most `dynamic_map_calls` map batches and `dynamic_share` of the
  text of a whole level (the largest), so a small index is not read almost whole; the best report is always read. The
  rest are left out "over the map budget". A question no report is near (`min_similarity`) keeps nothing.

Every report considered is in `Selection.considered` with its score and why it was kept or not, so a user sees what the
answer did not read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tiny_graphrag.records import Report
from tiny_graphrag.search.config import GlobalConfig
from tiny_graphrag.search.context import MapBatch, map_findings
from tiny_graphrag.search.report_index import GlobalIndex
from tiny_graphrag.tables import longest_fit

KEPT = "kept"
NOT_RELEVANT = "not relevant"
PARENT_NOT_RELEVANT = "its parent is not relevant"
REPLACED = "replaced by its relevant children"
OVER_BUDGET = "over the map budget"
TOO_DEEP = "below the deepest level asked for"


@dataclass(frozen=True)
class Considered:
    """One report as the selection saw it."""

    report: int  # the report's citation id
    title: str
    level: int
    similarity: float  # its best query cosine (report or finding)
    relevance: float  # 0..1 between the median and the best score
    why: str  # KEPT or the reason it was left out


@dataclass(frozen=True)
class Selection:
    kept: list[tuple[int, Report]]  # what is mapped, most relevant first
    considered: list[Considered]  # every report, best first
    best_similarity: float

    def closest(self, n: int = 3) -> list[Considered]:
        return self.considered[:n]


def report_similarities(
    globals_: GlobalIndex, query_vector: np.ndarray, embed: Callable[[list[str]], np.ndarray]
) -> dict[int, float]:
    """Each report's best query cosine (by report id): its own vector's, or its best finding's."""
    best: dict[int, float] = {rid: -1.0 for rid in range(len(globals_.reports))}
    if globals_.vectors is not None and len(globals_.vectors):
        for cid, sim in zip(globals_.vectors.ids, globals_.vectors.similarities(query_vector)):
            if cid in globals_.id_of:
                best[globals_.id_of[cid]] = float(sim)
    texts = [(rid, text) for rid, r in enumerate(globals_.reports) for _, text in map_findings(rid, r)]
    if not texts:
        return best
    sims = np.asarray(embed([t for _, t in texts]), dtype=np.float32) @ np.asarray(query_vector, dtype=np.float32)
    for (rid, _), sim in zip(texts, sims):
        best[rid] = max(best[rid], float(sim))
    return best


def select_reports(
    globals_: GlobalIndex,
    similarity: dict[int, float],
    config: GlobalConfig,
    *,
    max_level: int | None,
    pack: Callable[[Sequence[tuple[int, Report]]], list[MapBatch]],
    level_tokens: int,
) -> Selection:
    """The reports worth mapping (module docstring); `pack` packs reports into map batches, `level_tokens` is what the
    largest level packs into, `max_level` the deepest level the walk may reach (None: all)."""
    reports = globals_.reports
    levels = globals_.levels
    deepest = levels[-1] if max_level is None else max_level
    pool = [rid for rid, r in enumerate(reports) if r.level <= deepest]
    scores = [similarity[rid] for rid in pool]
    best = max(scores, default=-1.0)
    median = float(np.median(scores)) if scores else 0.0

    def relevance(rid: int) -> float:
        if best <= median:
            return float(similarity[rid] >= best)
        return min(1.0, max(0.0, (similarity[rid] - median) / (best - median)))

    why: dict[int, str] = {rid: TOO_DEEP for rid in range(len(reports)) if reports[rid].level > deepest}
    children = globals_.child_reports

    def rule_out(rid: int) -> None:
        """An irrelevant report, and below it everything its irrelevance rules out."""
        why[rid] = NOT_RELEVANT
        stack = list(children.get(rid, ()))
        while stack:
            child = stack.pop()
            why.setdefault(child, PARENT_NOT_RELEVANT)
            stack.extend(children.get(child, ()))

    kept: list[int] = []
    if best >= config.min_similarity:
        frontier = [rid for rid in pool if reports[rid].level == levels[0]]
        # A lone root (a tree's top summary) is about everything, so never nearer than average: it
        # is judged by its children, not ruled out with them.
        lone = frontier[:1] if len(frontier) == 1 else []
        while frontier:
            rid = frontier.pop(0)
            if relevance(rid) < config.dynamic_cutoff and rid not in lone:
                rule_out(rid)
                continue
            below = [c for c in children.get(rid, ()) if reports[c].level <= deepest]
            if any(relevance(c) >= config.dynamic_cutoff for c in below):
                why[rid] = REPLACED
                frontier.extend(below)
            else:
                kept.append(rid)
                for c in below:
                    rule_out(c)
    for rid in pool:
        why.setdefault(rid, NOT_RELEVANT)
    kept.sort(key=lambda rid: (-similarity[rid], rid))
    # The longest best-first prefix within the map budget (calls and tokens grow with it).
    ranked = [(rid, reports[rid]) for rid in kept]
    max_tokens = config.dynamic_share * level_tokens

    def fits(n: int) -> bool:
        batches = pack(ranked[:n])
        return len(batches) <= config.dynamic_map_calls and sum(b.tokens for b in batches) <= max_tokens

    n = max(longest_fit(len(ranked), fits), min(1, len(ranked)))  # the best report is read whatever the budget
    for i, (rid, _) in enumerate(ranked):
        why[rid] = KEPT if i < n else OVER_BUDGET
    considered = [
        Considered(rid, reports[rid].title, reports[rid].level, round(similarity[rid], 4), round(relevance(rid), 4), w)
        for rid, w in why.items()
    ]
    return Selection(ranked[:n], sorted(considered, key=lambda c: (-c.similarity, c.report)), best)
