"""Context builders: turn ranked candidates into the data tables a model reads, within token budgets.

Separate from the searches so that `only_context=True`, retrieval evaluation and the budget tests need no model. Every
budget is counted with the given TokenCounter (the LLM's tokenizer, or the stated fallback), and every table is measured
again as a whole after packing, so a context never exceeds its budget even where a tokenizer merges across row
boundaries.

Tables use GraphRAG's "-----Name-----" headers and "|"-separated rows; the first column is the id the model cites."""

from __future__ import annotations

import contextlib
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tiny_graphrag.citations import parse_citations, strip_citations
from tiny_graphrag.records import Chunk, Report
from tiny_graphrag.search.config import LocalConfig
from tiny_graphrag.search.result import SourceChunk, SourceEntity, SourceRelation, SourceReport, Sources
from tiny_graphrag.tables import Count, fit_text, pack, pack_table, row

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.index.store import IndexStore
    from tiny_graphrag.search.graph_index import GraphIndex


@dataclass(frozen=True)
class BuiltContext:
    """The data section of a prompt, the sources it shows, and its size."""

    text: str
    sources: Sources
    tokens: int
    budget: int
    section_tokens: Mapping[str, int] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.sources.chunks or self.sources.reports or self.sources.entities or self.sources.relationships)


def join_sections(sections: Sequence[str]) -> str:
    return "\n\n".join(s for s in sections if s)


def source_chunk(chunk: Chunk, sid: int) -> SourceChunk:
    return SourceChunk(sid, chunk.id, chunk.doc_id, chunk.start, chunk.end, chunk.text)


def source_report(rid: int, report: Report) -> SourceReport:
    return SourceReport(rid, report.community_id, report.level, report.title, report.rating, report.text())


def chunk_rows(
    chunks: Sequence[Chunk], sid_of: Mapping[str, int], places: Mapping[str, str] | None = None
) -> list[tuple[str, SourceChunk]]:
    """Source rows; a chunk with a place (SearchIndex.places: "report.pdf, p. 12") shows it first."""
    places = places or {}
    return [
        (row(sid_of[c.id], f"({places[c.id]}) {c.text}" if c.id in places else c.text), source_chunk(c, sid_of[c.id]))
        for c in chunks
    ]


def report_rows(reports: Sequence[tuple[int, Report]]) -> list[tuple[str, SourceReport]]:
    return [(row(rid, r.title, r.text()), source_report(rid, r)) for rid, r in reports]


def entity_rows(graph, keys: Sequence[str]) -> list[tuple[str, SourceEntity]]:
    out = []
    for key in keys:
        d = graph.nodes[key]
        name = d.get("name", key)
        aliases = [a for a in d.get("aliases", ()) if a != name][:3]
        desc = f"also called {', '.join(aliases)}" if aliases else ""
        text = row(d["hid"], name, d.get("type", ""), desc, d.get("mentions", 0))
        out.append((text, SourceEntity(int(d["hid"]), key, name, d.get("type", ""), text)))
    return out


def relation_rows(graph, edges: Sequence[tuple[str, str, str]]) -> list[tuple[str, SourceRelation]]:
    out = []
    for u, v, k in edges:
        d = graph.edges[u, v, k]
        head, tail = graph.nodes[u].get("name", u), graph.nodes[v].get("name", v)
        label = d.get("label", k)
        text = row(d["hid"], head, tail, label, d.get("weight", 1))
        out.append((text, SourceRelation(int(d["hid"]), head, tail, label, float(d.get("weight", 1)), text)))
    return out


def nested_sources(sources: Sources, store: IndexStore, index: GraphIndex) -> Sources:
    """`sources` plus what the shown reports cite in their own [Data: ...] citations, so that an id
    a model copies out of a report resolves too."""
    cited: dict[str, list[int]] = defaultdict(list)
    for r in sources.reports:
        for kind, ids in parse_citations(r.text).items():
            cited[kind].extend(ids)
    chunks = []
    for sid in dict.fromkeys(cited["sources"]):
        with contextlib.suppress(KeyError):  # a report may cite a source since removed
            chunks.append(source_chunk(store.chunk_by_sid(sid), sid))
    keys = [index.node_by_hid[h] for h in dict.fromkeys(cited["entities"]) if h in index.node_by_hid]
    edges = [index.edge_by_hid[h] for h in dict.fromkeys(cited["relationships"]) if h in index.edge_by_hid]
    extra = Sources(
        chunks=tuple(chunks),
        entities=tuple(s for _, s in entity_rows(index.graph, keys)),
        relationships=tuple(s for _, s in relation_rows(index.graph, edges)),
    )
    return sources.merged(extra)


ENTITY_HEADER = "id|entity|type|description|mentions"
RELATION_HEADER = "id|source|target|relation|weight"
REPORT_HEADER = "id|title|content"
SOURCE_HEADER = "id|text"
GENERIC_RELATIONS = frozenset({"related to"})  # the general schema's catch-all, the co-occurrence default


def build_naive_context(
    chunks: Sequence[Chunk],
    sid_of: Mapping[str, int],
    budget: int,
    count: Count,
    places: Mapping[str, str] | None = None,
) -> BuiltContext:
    """The best chunks, in rank order, until the budget is full."""
    text, kept, n = pack_table("Sources", SOURCE_HEADER, chunk_rows(chunks, sid_of, places), budget, count)
    return BuiltContext(text, Sources(chunks=tuple(kept)), n, budget, {"sources": n})


def local_budgets(budget: int, config: LocalConfig) -> dict[str, int]:
    """Token shares: reports, entities + relationships, text (GraphRAG: 15% / 35% / 50%)."""
    reports = int(budget * config.community_share)
    text = int(budget * config.text_share)
    return {"reports": reports, "graph": budget - reports - text, "text": text}


def build_local_context(
    *,
    graph,
    entities: Sequence[str],
    relationships: Sequence[tuple[str, str, str]],
    reports: Sequence[tuple[int, Report]],
    chunks: Sequence[Chunk],
    sid_of: Mapping[str, int],
    budget: int,
    config: LocalConfig,
    count: Count,
    omit_relations: frozenset[str] | set[str] = frozenset(),
    places: Mapping[str, str] | None = None,
) -> BuiltContext:
    """Text chunks first, then reports, entities and relationships, each table within its share.

    Shares are upper bounds for reports and for entities + relationships (entities may use at most half of that share,
    relationships the rest); what they leave unused goes to the text chunks, so the whole context never exceeds
    `budget`. The text comes first because a small reader answers from what it reads first and took the graph tables'
    ids for answers when they came first (bench/RESULTS.md). Relationships labelled with one of `omit_relations`
    (sentence co-occurrence) or the generic "related to" are not shown: "A related to B" says nothing the text does not,
    and costs the text room."""
    shares = local_budgets(budget, config)
    ent_rows = entity_rows(graph, entities) if config.entity_table else []
    ents = pack_table("Entities", ENTITY_HEADER, ent_rows, shares["graph"] // 2, count)
    omit = GENERIC_RELATIONS | set(omit_relations)
    shown = [e for e in relationships if graph.edges[e].get("label", e[2]) not in omit]
    rel_budget = shares["graph"] - ents[2] - (count("\n\n") if ents[2] else 0)  # the separator between sections
    tables = {  # in the order shown after the text; the text gives way first, then the last of them
        "reports": pack_table("Reports", REPORT_HEADER, report_rows(reports), shares["reports"], count),
        "entities": ents,
        "relationships": pack_table("Relationships", RELATION_HEADER, relation_rows(graph, shown), rel_budget, count),
    }
    rows = chunk_rows(chunks, sid_of, places)
    while True:
        tail = join_sections([text for text, _, _ in tables.values()])
        # The text table gets what the tables leave; the whole is measured as joined, and where a
        # tokenizer merges across the join the text gives way first, then the last table.
        room = budget - (count("\n\n" + tail) if tail else 0)
        src_text, chunk_src, n_src = pack_table("Sources", SOURCE_HEADER, rows, room, count)
        while True:
            full = join_sections([src_text, tail])
            total = count(full) if full else 0
            if total <= budget or not chunk_src:
                break
            room -= max(1, total - budget)
            src_text, chunk_src, n_src = pack_table("Sources", SOURCE_HEADER, rows, room, count)
        if total <= budget or not tail:
            break
        tables[[k for k, (text, _, _) in tables.items() if text][-1]] = ("", [], 0)
    sources = Sources(chunks=tuple(chunk_src), **{k: tuple(kept) for k, (_, kept, _) in tables.items()})
    tokens = {"sources": n_src} | {k: n for k, (_, _, n) in tables.items()}
    return BuiltContext(full, sources, total, budget, tokens, {"budgets": shares})


@dataclass(frozen=True)
class MapBatch:
    """One map call's reports, as the findings it shows: (id, report id, text) of each."""

    text: str
    report_ids: tuple[int, ...]
    tokens: int
    findings: tuple[tuple[str, int, str], ...] = ()


FINDING_HEADER = "id|report|finding"


def map_findings(rid: int, report: Report) -> list[tuple[str, str]]:
    """(id, text) of what global search maps of a report: each finding's explanation (for a
    grounded finding, its source row's own words), else the report's summary (a RAPTOR summary
    has nothing else). Ids are "<report id>.<n>", the same in every batch."""
    texts = [strip_citations(f.explanation) for f in report.findings] or [strip_citations(report.summary)]
    return [(f"{rid}.{n}", t) for n, t in enumerate((t for t in texts if t.strip()), start=1)]


def pack_report_batches(
    reports: Sequence[tuple[int, Report]], chunk_tokens: int, count: Count, *, seed: int | None = 0
) -> list[MapBatch]:
    """Shuffle the reports (GraphRAG: so no batch is all one region of the graph), then fill
    batches of at most `chunk_tokens` tokens with their findings, a report's findings in one
    batch. A report longer than a whole batch keeps the findings that fit (the first cut to fit)."""
    items = list(reports)
    if seed is not None:
        random.Random(seed).shuffle(items)
    head = f"-----Findings-----\n{FINDING_HEADER}"
    head_cost = count(head + "\n")
    room = chunk_tokens - head_cost
    if room <= 0:
        raise ValueError(f"map chunk size {chunk_tokens} tokens leaves no room for a report")
    blocks: list[tuple[int, list[tuple[str, str, str]], int]] = []  # report id, (id, text, row), tokens
    for rid, report in items:
        rows: list[tuple[str, str, str]] = []
        used = 0
        for fid, text in map_findings(rid, report):
            line = row(fid, report.title, text)
            cost = count(line + "\n")
            if used + cost > room:
                if rows:
                    break
                line = fit_text(line, room - 1, count)
                text, cost = line.split("|", 2)[-1], count(line + "\n")
            rows.append((fid, text, line))
            used += cost
        blocks.append((rid, rows, used))
    batches: list[MapBatch] = []
    start = 0
    while start < len(blocks):
        end, used = start + 1, head_cost + blocks[start][2]
        while end < len(blocks) and used + blocks[end][2] <= chunk_tokens:
            used += blocks[end][2]
            end += 1
        while True:  # measured as a whole a batch may come out over: its last reports go to the next one,
            picked = [(rid, r) for rid, block, _ in blocks[start:end] for r in block]
            text = head + "\n" + "\n".join(line for _, (_, _, line) in picked)
            n = count(text)
            if n <= chunk_tokens or (end == start + 1 and len(blocks[start][1]) == 1):
                break
            if end > start + 1:
                end -= 1
            else:  # a lone report's last findings
                blocks[start][1].pop()
        report_ids = tuple(rid for rid, _, _ in blocks[start:end])
        batches.append(MapBatch(text, report_ids, n, tuple((fid, rid, t) for rid, (fid, t, _) in picked)))
        start = end
    return batches


@dataclass(frozen=True)
class KeyPoint:
    description: str
    score: int  # the map model's 0-100 helpfulness score: what the reduce ranks by
    batch: int  # which map call produced it
    report: int | None = None  # the report of the finding it quotes (None: a point a backend wrote)


def build_reduce_context(points: Sequence[KeyPoint], budget: int, count: Count) -> tuple[str, list[KeyPoint], int]:
    """Key points, most helpful first, until the budget is full (score-0 points never enter)."""
    ranked = sorted((p for p in points if p.score > 0), key=lambda p: (-p.score, p.batch))

    def block(p: KeyPoint, position: int) -> str:
        return f"----Analyst point {position + 1}----\nImportance score: {p.score}\n{p.description}"

    return pack(
        ranked,
        lambda p, kept: count(block(p, len(kept)) + "\n\n"),
        lambda kept: "\n\n".join(block(p, i) for i, p in enumerate(kept)),
        budget,
        count,
    )
