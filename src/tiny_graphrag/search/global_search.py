"""Global search (GraphRAG paper §3.1.6): map community reports to scored key points, reduce to an answer.

- Selection (selection.py, the default): the reports nearest the question by the index's own
  embeddings, from the root level down (an irrelevant parent rules out its children), best first,
  within `dynamic_map_calls` map calls; every report considered is in `details["considered"]` with
  why it was kept or left out. A question no report is near gets no model call at all.
- Level (`selection="level"`, the way before): every report of the level asked for, else of the
  deepest level whose reports fit in `max_map_chunks` map calls (the paper's C2/C3 were the most
  comprehensive, but each map call costs seconds to minutes on a local CPU model), else the root.
- Map: the level's reports are shuffled and their findings packed into chunks of
  `map_chunk_tokens`; one call per chunk chooses the findings that help (by id, a JSON-schema
  enum) with 0-100 helpfulness scores, so a key point is a finding's own words citing its
  report. An invalid answer becomes one score-0 point (logged), never an exception.
- Rank: every finding mapped is a candidate, its importance the model's score (0 when it was not
  chosen) mixed with how near its words are to the query (grounding.py: a small map model's
  choices and scores alone did not tell relevant findings from irrelevant ones); points under
  `point_cutoff` of the best one's are dropped, and a query no finding is near
  (`min_similarity`) that the model scored 0 throughout gets no reduce.
- Reduce: the rest, most important first, until the reduce budget is full; one more call
  writes the answer citing reports. Calls = map chunks + 1.

Usage is counted per category: "map" (all map calls) and "reduce" (the answer call).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tiny_graphrag.backends.llm import LLM
from tiny_graphrag.citations import parse_citations, strip_citations
from tiny_graphrag.errors import InputError
from tiny_graphrag.records import Report
from tiny_graphrag.search.answer import CallMeter, SearchRun
from tiny_graphrag.search.config import GlobalConfig
from tiny_graphrag.search.context import (
    BuiltContext,
    KeyPoint,
    MapBatch,
    build_reduce_context,
    nested_sources,
    pack_report_batches,
    source_chunk,
    source_report,
)
from tiny_graphrag.search.grounding import Grounding, ground_points
from tiny_graphrag.search.index import SearchIndex
from tiny_graphrag.search.prompts import NO_DATA_ANSWER, map_messages, map_schema, reduce_messages
from tiny_graphrag.search.report_index import GlobalIndex
from tiny_graphrag.search.result import SearchResult, Sources, StreamingResult
from tiny_graphrag.search.selection import Selection, report_similarities, select_reports

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


def _complete_points(text: str) -> list[Any] | None:
    """The whole point objects of a map answer cut off inside its list (max_tokens reached):
    every object up to the one the cut fell in; None when there is no list to read."""
    m = re.search(r'"points"\s*:\s*\[', text)
    if not m:
        return None
    decoder, pos = json.JSONDecoder(), m.end()
    points: list[Any] = []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return points
        points.append(obj)


def finding_point(report: int, text: str) -> str:
    """A finding as a key point: its own words, citing its report."""
    return f"{text} [Data: Reports ({report})]"


def parse_map_answer(
    text: str, batch: int, findings: Sequence[tuple[str, int, str]] = ()
) -> tuple[list[KeyPoint], bool]:
    """Key points from a map answer: each chosen finding (`findings`: the batch's (id, report id,
    text)) in its own words, citing its report; a point a backend wrote as a description (one
    that ignores the schema) is taken as written, its report the first batch report it cites. A
    cut-off answer keeps its complete points; anything unusable degrades to one score-0 point."""
    data: Any = None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        m = re.search(r"\{.*\}", text or "", re.DOTALL)  # prose around a JSON object
        if m:
            try:
                data = json.loads(m.group(0))
            except json.JSONDecodeError:
                data = None
        if data is None:
            data = _complete_points(text or "")
    raw_points = data.get("points") if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(raw_points, list):
        return [KeyPoint(INVALID_MAP_ANSWER, 0, batch)], False
    by_id = {fid: (rid, t) for fid, rid, t in findings}
    batch_reports = {rid for _, rid, _ in findings}
    points: list[KeyPoint] = []
    for p in raw_points:
        if not isinstance(p, dict):
            continue
        chosen = by_id.get(str(p.get("finding")))
        desc = finding_point(*chosen) if chosen else p.get("description", p.get("answer"))
        # A small model made to name several findings repeats one: the copy would count twice.
        if not isinstance(desc, str) or not desc.strip() or any(k.description == desc.strip() for k in points):
            continue
        try:
            score = int(round(float(p.get("score", 0))))
        except (TypeError, ValueError):
            score = 0
        report = (
            chosen[0] if chosen else next((r for r in parse_citations(desc)["reports"] if r in batch_reports), None)
        )
        points.append(KeyPoint(desc.strip(), max(0, min(100, score)), batch, report=report))
    if not points:
        return [KeyPoint(INVALID_MAP_ANSWER, 0, batch)], False
    return points, True


def run_map(llm: LLM, batches: Sequence[MapBatch], query: str, config: GlobalConfig) -> list[MapAnswer]:
    """One constrained call per batch: which of its findings help, and how much."""
    answers = []
    for i, batch in enumerate(batches):
        schema = map_schema(config.max_points, [fid for fid, _, _ in batch.findings])
        out = llm.complete(
            map_messages(batch.text, query), schema=schema, max_tokens=config.map_max_tokens, temperature=0.0
        )
        points, valid = parse_map_answer(out.text, i, batch.findings)
        if not valid:
            log.warning("map answer %d was not valid JSON (finish_reason=%s): %.120r", i, out.finish_reason, out.text)
        answers.append(MapAnswer(i, tuple(points), valid, out.text, out.prompt_tokens, out.completion_tokens))
    return answers


def _candidates(answers: Sequence[MapAnswer], batches: Sequence[MapBatch], config: GlobalConfig) -> list[KeyPoint]:
    """The map model's points, and, when points are grounded, every other finding of the mapped
    batches with a vote of 0 (a small model's choices missed the relevant ones: grounding.py).
    Grounded, a sentence is one candidate however many reports quote it (communities share
    source text): its best-voted copy, else its first."""
    points = [p for a in answers for p in a.points]
    if config.relevance_weight <= 0:
        return points
    points += [
        KeyPoint(finding_point(rid, text), 0, i, report=rid)
        for i, batch in enumerate(batches)
        for _, rid, text in batch.findings
    ]
    best: dict[str, KeyPoint] = {}
    for p in points:
        key = " ".join(strip_citations(p.description).split())
        if key not in best or p.score > best[key].score:
            best[key] = p
    return list(best.values())


def _grounded(
    index: SearchIndex,
    points: list[KeyPoint],
    qvec: np.ndarray | None,
    query: str,
    config: GlobalConfig,
    *,
    median: float | None,
) -> tuple[list[KeyPoint], list[Grounding | None], int]:
    """The points with their grounded importance (grounding.py), or as the model scored them when
    grounding is off; and the reduce's entry score (`point_cutoff` of the best point's;
    build_reduce_context never admits a 0)."""
    qvec = qvec if qvec is not None or config.relevance_weight <= 0 else index.embed_query(query)
    pairs = ground_points(
        points, qvec, index.embed_texts, weight=config.relevance_weight, skip=INVALID_MAP_ANSWER, median=median
    )
    points, grounding = [p for p, _ in pairs], [g for _, g in pairs]
    best = max((p.score for p in points), default=0)
    return points, grounding, math.ceil(config.point_cutoff * best)


def map_plan(index: SearchIndex, level: int | None, config: GlobalConfig) -> tuple[GlobalIndex, int | None]:
    """What global search maps (reports or tree summaries) and the level asked for (None: chosen
    later by the budget); checked before a search starts, so a wrong level never loads a model."""
    globals_ = index.map_source(config.source)
    if level is None:
        level = config.level
    levels = globals_.levels
    if level is not None and (isinstance(level, bool) or not isinstance(level, int) or level not in levels):
        raise InputError(f"community level {level!r} does not exist in {index.path}; its levels are {levels}")
    return globals_, level


def search_global(
    index: SearchIndex,
    run: SearchRun,
    plan: tuple[GlobalIndex, int | None],
    config: GlobalConfig,
    *,
    stream: bool,
) -> SearchResult | StreamingResult:
    globals_, level = plan
    levels = globals_.levels
    query, only_context = run.query, run.only_context
    counter = run.counter
    chunk_tokens = run.room(map_messages("", query), config.map_max_tokens, "map", wanted=config.map_chunk_tokens)
    reduce_room = run.room(reduce_messages("", query), config.reduce_max_tokens, "reduce")

    def pack(reports: Sequence[tuple[int, Report]]) -> list[MapBatch]:
        return pack_report_batches(reports, chunk_tokens, counter, seed=config.shuffle_seed)

    selection: Selection | None = None
    finding_median: float | None = None  # dynamic: grounding's zero is the whole index's median finding
    with run.timer("context"):
        qvec = None
        if config.selection == "dynamic":
            qvec = index.embed_query(query)
            similarities = report_similarities(globals_, qvec, index.embed_texts)
            finding_median = similarities.finding_median
            selection = select_reports(
                globals_,
                similarities.by_report,
                config,
                max_level=level,
                pack=pack,
                level_tokens=globals_.level_tokens(chunk_tokens, counter),
            )
            chosen = level if level is not None else levels[-1]
            pool = [(rid, r) for rid, r in enumerate(globals_.reports) if r.level <= chosen]
            selected = selection.kept
        else:
            chosen = level if level is not None else globals_.choose_level(config, chunk_tokens, counter)
            pool = selected = globals_.at_level(chosen)
        batches = pack(selected)
        # what the level way would map: every report of the level its default rule chooses (cached)
        level_way = level if level is not None else globals_.choose_level(config, chunk_tokens, counter)
        without = globals_.packed(level_way, chunk_tokens, counter, config.shuffle_seed)[0]

    shown = {rid for b in batches for rid in b.report_ids}
    sources = nested_sources(
        Sources(reports=tuple(source_report(rid, r) for rid, r in pool if rid in shown)),
        index.store,
        index.graph_index,
    )
    if globals_.covers is not None:  # tree summaries: their sources are the chunks they cover
        covered = dict.fromkeys(c for rid, r in pool if rid in shown for c in globals_.covers[r.community_id])
        sources = sources.merged(
            Sources(chunks=tuple(source_chunk(c, index.sid_of[c.id]) for c in index.store.chunks_by_id(list(covered))))
        )
    map_text = "\n\n".join(f"=====Map call {i + 1} of {len(batches)}=====\n{b.text}" for i, b in enumerate(batches))
    details: dict[str, Any] = run.details
    details.update(
        mapped="tree summaries" if globals_.covers is not None else "community reports",
        selection=config.selection,
        level=chosen,
        levels=levels,
        level_chosen_by=(
            "argument"
            if level is not None
            else "every level (dynamic selection)"
            if selection
            else "default rule (deepest level within max_map_chunks)"
        ),
        reports_at_level=len(pool),
        reports_mapped=len(selected),
        map_chunks=len(batches),
        map_chunks_without_selection=without,
        map_calls_saved_by_selection=without - len(batches),
        map_chunk_tokens=chunk_tokens,
        map_batch_tokens=[b.tokens for b in batches],
        map_contexts=[b.text for b in batches],
        reduce_budget=reduce_room,
    )
    if selection is not None:
        details["considered"] = [dataclasses.asdict(c) for c in selection.considered]
    map_tokens = sum(b.tokens for b in batches)
    built = BuiltContext(map_text, sources, map_tokens, chunk_tokens, {"map": map_tokens})
    if selection is None and len(batches) > config.max_map_chunks and len(selected) == len(pool):
        run.notes.append(
            f"level {chosen} needs {len(batches)} map calls (one per {chunk_tokens}-token chunk of reports); "
            "dynamic selection (the default: GlobalConfig(selection='dynamic')) maps only the reports nearest the query"
        )
    if selection is not None and not selection.kept:
        closest = "; ".join(f"{c.title} ({c.similarity:.2f})" for c in selection.closest())
        run.notes.append(
            f"no report is near the question (best query cosine {selection.best_similarity:.2f} < "
            f"GlobalConfig.min_similarity={config.min_similarity}): no map or reduce call was made"
        )
        declined = f"{NO_DATA_ANSWER} The closest communities, none near enough: {closest}."
        if only_context:
            return run.result(built)
        return run.answer(built, None, max_tokens=0, stream=stream, context=map_text, declined=declined)
    if only_context:
        return run.result(built)

    llm = run.llm
    meter = CallMeter(llm)
    with run.timer("map"):
        answers = run_map(llm, batches, query, config)
    run.usage["map"] = meter.usage(sum(a.prompt_tokens for a in answers), sum(a.completion_tokens for a in answers))
    with run.timer("grounding"):
        points, grounding, min_score = _grounded(
            index, _candidates(answers, batches, config), qvec, query, config, median=finding_median
        )
    best_similarity = max((g.similarity for g in grounding if g is not None), default=None)
    vouched = any(p.model_score for p in points)  # the map model scored a point above 0 itself
    # Neither the map model nor the embedder found anything: no point reaches the reduce.
    far = best_similarity is not None and best_similarity < config.min_similarity and not vouched
    if far:
        run.notes.append(
            f"no finding is near the question (best query cosine {best_similarity:.2f} < "
            f"GlobalConfig.min_similarity={config.min_similarity}) and the map model scored every "
            "point 0: the reduce call was skipped"
        )
    with run.timer("reduce_context"):
        reduce_text, kept, reduce_tokens = build_reduce_context([] if far else points, reduce_room, counter, min_score)
    details.update(
        invalid_map_answers=sum(1 for a in answers if not a.valid),
        points=[
            {
                "score": p.score,
                "model_score": p.score if p.model_score is None else p.model_score,
                "description": p.description,
                "batch": p.batch,
                "source_report": p.report,
                **({"similarity": round(g.similarity, 3), "relevance": round(g.relevance, 3)} if g else {}),
            }
            for p, g in zip(points, grounding)
        ],
        points_in_reduce=len(kept),
        reduce_context=reduce_text,
        reduce_tokens=reduce_tokens,
    )
    if not kept and not far:
        run.notes.append(
            "no map answer found anything helpful (every point's importance is 0): the reduce call was skipped"
        )
    # context_tokens of a global result: everything the model read, map batches and reduce points.
    reduce_built = BuiltContext(
        reduce_text, sources, map_tokens + reduce_tokens, reduce_room, {"map": map_tokens, "reduce": reduce_tokens}
    )
    # Grounded, the reduce is not offered "the context does not say": a 0.5B reduce took that way
    # out with relevant points in front of it, and a question nothing is near never reaches it.
    # GraphRAG's ranking (relevance_weight=0) offers it, as GraphRAG's reduce prompt does.
    messages = reduce_messages(reduce_text, query, may_decline=config.relevance_weight <= 0) if kept else None
    return run.answer(
        reduce_built,
        messages,
        max_tokens=config.reduce_max_tokens,
        category="reduce",
        stream=stream,
        cite=("Reports",),
        context=map_text + "\n\n=====Reduce=====\n" + reduce_text,
        given_reports=point_reports(kept, {r.id for r in sources.reports}),
    )


def point_reports(kept: Sequence[KeyPoint], shown: set[int]) -> list[int]:
    """The reports the reduce's points came from, in the points' order: the one a finding's point
    quotes, else the mapped (`shown`) reports a written point cites."""
    out: dict[int, None] = {}
    for p in kept:
        ids = (
            [p.report] if p.report is not None else [r for r in parse_citations(p.description)["reports"] if r in shown]
        )
        out.update(dict.fromkeys(ids))
    return list(out)
