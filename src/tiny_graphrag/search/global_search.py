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
  writes the answer citing reports (calls = map chunks + 1).
A small reader's global answer (global_answer.py) quotes the nearest themes' own sentences, with no call.

Usage is counted per category: "map" (all map calls) and "reduce" (the answer call).
"""

from __future__ import annotations

import contextlib
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
from tiny_graphrag.search.global_answer import point_reports, search_themes
from tiny_graphrag.search.grounding import Grounding, ground_points
from tiny_graphrag.search.index import SearchIndex
from tiny_graphrag.search.prompts import NO_DATA_ANSWER, map_messages, map_schema, reduce_messages
from tiny_graphrag.search.report_index import GlobalIndex
from tiny_graphrag.search.result import SearchResult, Sources, StreamingResult
from tiny_graphrag.search.selection import Selection, report_similarities, select_reports
from tiny_graphrag.search.tokens import TokenCounter

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


def _json(text: str) -> Any:
    with contextlib.suppress(json.JSONDecodeError, TypeError):
        return json.loads(text)
    return None


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
    data = _json(text)
    if data is None and (m := re.search(r"\{.*\}", text or "", re.DOTALL)):  # prose around a JSON object
        data = _json(m.group(0))
    if data is None:
        data = _complete_points(text or "")
    raw_points = data.get("points") if isinstance(data, dict) else data
    by_id = {fid: (rid, t) for fid, rid, t in findings}
    batch_reports = {rid for _, rid, _ in findings}
    points: list[KeyPoint] = []
    for p in raw_points if isinstance(raw_points, list) else ():
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
        cited = (r for r in parse_citations(desc)["reports"] if r in batch_reports)
        report = chosen[0] if chosen else next(cited, None)
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
        KeyPoint(finding_point(rid, t), 0, i, report=rid) for i, b in enumerate(batches) for _, rid, t in b.findings
    ]
    best: dict[str, KeyPoint] = {}
    for p in points:
        key = " ".join(strip_citations(p.description).split())
        if key not in best or p.score > best[key].score:
            best[key] = p
    return list(best.values())


def map_plan(index: SearchIndex, level: int | None, config: GlobalConfig) -> tuple[GlobalIndex, int | None]:
    """What global search maps (reports or tree summaries) and the level asked for (None: chosen
    later by the budget); checked before a search starts, so a wrong level never loads a model."""
    globals_ = index.map_source(config.source)
    level = config.level if level is None else level
    levels = globals_.levels
    if level is not None and (isinstance(level, bool) or not isinstance(level, int) or level not in levels):
        raise InputError(f"community level {level!r} does not exist in {index.path}; its levels are {levels}")
    return globals_, level


@dataclass(frozen=True)
class Mapped:
    """What the map step reads: the reports chosen (from those of `level`, or with dynamic
    selection of every level down to it) packed into map batches."""

    level: int
    pool: int  # how many reports the selection (or the level) chose from
    reports: int  # how many of them are mapped
    batches: list[MapBatch]
    without: int  # the map calls of the level way (every report of its default level)
    selection: Selection | None = None
    query_vector: np.ndarray | None = None
    finding_median: float | None = None  # dynamic: grounding's zero is the whole index's median finding


def choose_reports(
    index: SearchIndex,
    query: str,
    plan: tuple[GlobalIndex, int | None],
    config: GlobalConfig,
    chunk_tokens: int,
    counter: TokenCounter,
) -> Mapped:
    """The reports to map, by dynamic selection or by level (module docstring), and their batches."""
    globals_, level = plan

    def pack(reports: Sequence[tuple[int, Report]]) -> list[MapBatch]:
        return pack_report_batches(reports, chunk_tokens, counter, seed=config.shuffle_seed)

    level_way = level if level is not None else globals_.choose_level(config, chunk_tokens, counter)
    if config.selection != "dynamic":  # the level way's batches are its own count: packed once
        pool = globals_.at_level(level_way)
        batches = pack(pool)
        return Mapped(level_way, len(pool), len(pool), batches, len(batches))
    without = globals_.packed(level_way, chunk_tokens, counter, config.shuffle_seed)[0]
    qvec = index.embed_query(query)
    similarities = report_similarities(globals_, qvec, index.embed_texts)
    level_tokens = globals_.level_tokens(chunk_tokens, counter)
    selection = select_reports(
        globals_, similarities.by_report, config, max_level=level, pack=pack, level_tokens=level_tokens
    )
    deepest = level if level is not None else globals_.levels[-1]
    in_reach = sum(1 for r in globals_.reports if r.level <= deepest)
    kept = selection.kept
    return Mapped(deepest, in_reach, len(kept), pack(kept), without, selection, qvec, similarities.finding_median)


def map_sources(index: SearchIndex, globals_: GlobalIndex, mapped: Mapped) -> Sources:
    """The reports shown to the map calls with what they cite; tree summaries with the chunks they cover."""
    reports = [(rid, globals_.reports[rid]) for rid in sorted({rid for b in mapped.batches for rid in b.report_ids})]
    sources = nested_sources(
        Sources(reports=tuple(source_report(rid, r) for rid, r in reports)), index.store, index.graph_index
    )
    if globals_.covers is None:
        return sources
    covered = dict.fromkeys(c for _, r in reports for c in globals_.covers[r.community_id])
    chunks = index.store.chunks_by_id(list(covered))
    return sources.merged(Sources(chunks=tuple(source_chunk(c, index.sid_of[c.id]) for c in chunks)))


def rank_points(
    index: SearchIndex, run: SearchRun, mapped: Mapped, config: GlobalConfig
) -> tuple[list[KeyPoint], list[Grounding | None], int, float | None]:
    """The map calls, then every candidate point with its importance (grounding.py, or the
    model's score when grounding is off), the reduce's entry score (`point_cutoff` of the best
    point's; build_reduce_context never admits a 0), and the best point's query cosine."""
    llm = run.llm
    meter = CallMeter(llm)
    with run.timer("map"):
        answers = run_map(llm, mapped.batches, run.query, config)
    run.usage["map"] = meter.usage(sum(a.prompt_tokens for a in answers), sum(a.completion_tokens for a in answers))
    run.details["invalid_map_answers"] = sum(1 for a in answers if not a.valid)
    with run.timer("grounding"):
        qvec = mapped.query_vector
        if qvec is None and config.relevance_weight > 0:
            qvec = index.embed_query(run.query)
        candidates = _candidates(answers, mapped.batches, config)
        weight, median = config.relevance_weight, mapped.finding_median
        pairs = ground_points(
            candidates, qvec, index.embed_texts, weight=weight, skip=INVALID_MAP_ANSWER, median=median
        )
    points, grounding = [p for p, _ in pairs], [g for _, g in pairs]
    min_score = math.ceil(config.point_cutoff * max((p.score for p in points), default=0))
    return points, grounding, min_score, max((g.similarity for g in grounding if g is not None), default=None)


def search_global(
    index: SearchIndex, run: SearchRun, plan: tuple[GlobalIndex, int | None], config: GlobalConfig, *, stream: bool
) -> SearchResult | StreamingResult:
    if run.reader == "small":  # the themes' own sentences, quoted (global_answer.py): no map or reduce call
        return search_themes(index, run, plan, config, stream=stream)
    globals_ = plan[0]
    query, counter = run.query, run.counter
    chunk_tokens = run.room(map_messages("", query), config.map_max_tokens, "map", wanted=config.map_chunk_tokens)
    reduce_room = run.room(reduce_messages("", query), config.reduce_max_tokens, "reduce")
    with run.timer("context"):
        mapped = choose_reports(index, query, plan, config, chunk_tokens, counter)
    batches, selection = mapped.batches, mapped.selection
    sources = map_sources(index, globals_, mapped)
    map_text = "\n\n".join(f"=====Map call {i + 1} of {len(batches)}=====\n{b.text}" for i, b in enumerate(batches))
    chosen_by = "every level (dynamic selection)" if selection else "default rule (deepest level within max_map_chunks)"
    run.details.update(
        mapped="tree summaries" if globals_.covers is not None else "community reports",
        selection=config.selection,
        level=mapped.level,
        levels=globals_.levels,
        level_chosen_by="argument" if plan[1] is not None else chosen_by,
        reports_at_level=mapped.pool,
        reports_mapped=mapped.reports,
        map_chunks=len(batches),
        map_chunks_without_selection=mapped.without,
        map_calls_saved_by_selection=mapped.without - len(batches),
        map_chunk_tokens=chunk_tokens,
        map_batch_tokens=[b.tokens for b in batches],
        map_contexts=[b.text for b in batches],
        reduce_budget=reduce_room,
    )
    map_tokens = sum(b.tokens for b in batches)
    built = BuiltContext(map_text, sources, map_tokens, chunk_tokens, {"map": map_tokens})
    if selection is None and len(batches) > config.max_map_chunks and mapped.reports == mapped.pool:
        run.notes.append(
            f"level {mapped.level} needs {len(batches)} map calls (one per {chunk_tokens}-token chunk of reports); "
            "dynamic selection (the default: GlobalConfig(selection='dynamic')) maps only the reports nearest the query"
        )
    if selection is not None:
        run.details["considered"] = [dataclasses.asdict(c) for c in selection.considered]
        if not selection.kept:
            why = (
                f"no report is near the question (best query cosine {selection.best_similarity:.2f} < "
                f"GlobalConfig.min_similarity={config.min_similarity})"
                if selection.best_similarity < config.min_similarity
                else "the reports nearest the question lie under top-level reports that are not near it "
                f"(GlobalConfig.dynamic_cutoff={config.dynamic_cutoff})"
            )
            run.notes.append(f"{why}: no map or reduce call was made")
            if not run.only_context:
                closest = "; ".join(f"{c.title} ({c.similarity:.2f})" for c in selection.closest())
                declined = f"{NO_DATA_ANSWER} The closest communities, none near enough: {closest}."
                return run.answer(built, None, max_tokens=0, stream=stream, context=map_text, declined=declined)
    if run.only_context:
        return run.result(built)
    return reduce_points(index, run, mapped, config, built, reduce_room, stream=stream)


def reduce_points(
    index: SearchIndex,
    run: SearchRun,
    mapped: Mapped,
    config: GlobalConfig,
    built: BuiltContext,
    room: int,
    *,
    stream: bool,
) -> SearchResult | StreamingResult:
    """The map calls, the points ranked, and the reduce call over the best of them."""
    points, grounding, min_score, best_similarity = rank_points(index, run, mapped, config)
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
        reduce_text, kept, reduce_tokens = build_reduce_context([] if far else points, room, run.counter, min_score)
    run.details.update(
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
    sections = {"map": built.tokens, "reduce": reduce_tokens}
    reduce_built = BuiltContext(reduce_text, built.sources, built.tokens + reduce_tokens, room, sections)
    # Grounded, the reduce is not offered "the context does not say": a 0.5B reduce took that way
    # out with relevant points in front of it, and a question nothing is near never reaches it.
    # GraphRAG's ranking (relevance_weight=0) offers it, as GraphRAG's reduce prompt does.
    messages = reduce_messages(reduce_text, run.query, may_decline=config.relevance_weight <= 0) if kept else None
    return run.answer(
        reduce_built,
        messages,
        max_tokens=config.reduce_max_tokens,
        category="reduce",
        stream=stream,
        cite=("Reports",),
        context=built.text + "\n\n=====Reduce=====\n" + reduce_text,
        given_reports=point_reports(kept, {r.id for r in built.sources.reports}),
    )
