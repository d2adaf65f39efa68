"""Global search (GraphRAG paper §3.1.6): map community reports to scored key points, reduce to an answer.

- Selection (selection.py): the reports nearest the question by the index's own embeddings, from the root level down (an
  irrelevant parent rules out its children), best first, within `dynamic_map_calls` map calls; every report considered
  is in `details["considered"]` with why it was kept or left out. A question no report is near gets no model call at
  all.
- Map: the chosen reports are shuffled and their findings packed into chunks of `map_chunk_tokens`; one call per chunk
  chooses the findings that help (by id, a JSON-schema enum) with 0-100 helpfulness scores, so a key point is a
  finding's own words citing its report. An invalid answer becomes one score-0 point (logged), never an exception.
- Reduce: the points the map model scored above 0, most helpful first, until the reduce budget is full; one more call
  writes the answer citing reports (calls = map chunks + 1). No point above 0: no reduce call.
A small reader's global answer (global_answer.py) quotes the nearest themes' own sentences, with no call.

Usage is counted per category: "map" (all map calls) and "reduce" (the answer call)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tiny_graphrag.backends.llm import LLM
from tiny_graphrag.citations import parse_citations
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
from tiny_graphrag.search.global_answer import search_themes
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
        # The schema cannot forbid naming a finding twice: the copy would count twice in the reduce.
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


def map_plan(index: SearchIndex, level: int | None, config: GlobalConfig) -> tuple[GlobalIndex, int | None]:
    """What global search maps (reports or tree summaries) and the deepest level the selection may descend to (None:
    every level); checked before a search starts, so a wrong level never loads a model."""
    globals_ = index.map_source(config.source)
    level = config.level if level is None else level
    levels = globals_.levels
    if level is not None and (isinstance(level, bool) or not isinstance(level, int) or level not in levels):
        raise InputError(f"community level {level!r} does not exist in {index.path}; its levels are {levels}")
    return globals_, level


@dataclass(frozen=True)
class Mapped:
    """What the map step reads: the reports the selection chose, packed into map batches."""

    level: int  # the deepest level the selection could reach
    pool: int  # how many reports the selection chose from
    batches: list[MapBatch]
    selection: Selection


def choose_reports(
    index: SearchIndex,
    query: str,
    plan: tuple[GlobalIndex, int | None],
    config: GlobalConfig,
    chunk_tokens: int,
    counter: TokenCounter,
) -> Mapped:
    """The reports to map (selection.py) and their batches."""
    globals_, level = plan

    def pack(reports: Sequence[tuple[int, Report]]) -> list[MapBatch]:
        return pack_report_batches(reports, chunk_tokens, counter, seed=config.shuffle_seed)

    similarities = report_similarities(globals_, index.embed_query(query), index.embed_texts)
    level_tokens = globals_.level_tokens(chunk_tokens, counter)
    selection = select_reports(globals_, similarities, config, max_level=level, pack=pack, level_tokens=level_tokens)
    deepest = level if level is not None else globals_.levels[-1]
    in_reach = sum(1 for r in globals_.reports if r.level <= deepest)
    return Mapped(deepest, in_reach, pack(selection.kept), selection)


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


def map_points(run: SearchRun, mapped: Mapped, config: GlobalConfig) -> list[KeyPoint]:
    """The map calls, counted under "map": every point they wrote, scored by the map model."""
    meter = CallMeter(run.llm)
    with run.timer("map"):
        answers = run_map(run.llm, mapped.batches, run.query, config)
    run.usage["map"] = meter.usage(sum(a.prompt_tokens for a in answers), sum(a.completion_tokens for a in answers))
    run.details["invalid_map_answers"] = sum(1 for a in answers if not a.valid)
    return [p for a in answers for p in a.points]


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
    run.details.update(
        mapped="tree summaries" if globals_.covers is not None else "community reports",
        level=mapped.level,
        levels=globals_.levels,
        reports_at_level=mapped.pool,
        reports_mapped=len(selection.kept),
        map_chunks=len(batches),
        map_chunk_tokens=chunk_tokens,
        map_batch_tokens=[b.tokens for b in batches],
        map_contexts=[b.text for b in batches],
        reduce_budget=reduce_room,
        considered=[dataclasses.asdict(c) for c in selection.considered],
    )
    map_tokens = sum(b.tokens for b in batches)
    built = BuiltContext(map_text, sources, map_tokens, chunk_tokens, {"map": map_tokens})
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
    return reduce_points(run, mapped, config, built, reduce_room, stream=stream)


def reduce_points(
    run: SearchRun, mapped: Mapped, config: GlobalConfig, built: BuiltContext, room: int, *, stream: bool
) -> SearchResult | StreamingResult:
    """The map calls, and the reduce call over the best of their points (GraphRAG's rule: a
    point the map model scored 0 never reaches the reduce)."""
    points = map_points(run, mapped, config)
    with run.timer("reduce_context"):
        reduce_text, kept, reduce_tokens = build_reduce_context(points, room, run.counter)
    run.details.update(
        points=[
            {"score": p.score, "description": p.description, "batch": p.batch, "source_report": p.report}
            for p in points
        ],
        points_in_reduce=len(kept),
        reduce_context=reduce_text,
        reduce_tokens=reduce_tokens,
    )
    if not kept:
        run.notes.append("no map answer found anything helpful (every point scored 0): the reduce call was skipped")
    # context_tokens of a global result: everything the model read, map batches and reduce points.
    sections = {"map": built.tokens, "reduce": reduce_tokens}
    reduce_built = BuiltContext(reduce_text, built.sources, built.tokens + reduce_tokens, room, sections)
    return run.answer(
        reduce_built,
        reduce_messages(reduce_text, run.query) if kept else None,
        max_tokens=config.reduce_max_tokens,
        category="reduce",
        stream=stream,
        cite=("Reports",),
        context=built.text + "\n\n=====Reduce=====\n" + reduce_text,
    )
