"""Community reports (GraphRAG paper §3.1.5): context building, constrained generation, citations.

The context builder is separate from generation so its token budget can be tested on its own.
Leaf communities are described by their elements (entities, relationships, source snippets),
most connected relationships first, until the budget is reached. A higher-level community uses
its own elements when they all fit; otherwise sub-community reports replace the elements of
those sub-communities, largest first, until the rest fits. Every prompt is counted with the
LLM's own tokenizer, template included, so the budget is never exceeded.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from .errors import TinyGraphRAGError
from .llm import LLM, ContextWindowError
from .citations import CitationKind, filter_citations, parse_citations, strip_citations
from .records import Community, Finding, Report

log = logging.getLogger(__name__)

# Room for the chat template's own tokens (role markers, BOS, a date header in Llama 3), which
# the context budget does not see because it counts message contents only.
CHAT_TEMPLATE_MARGIN = 64
SNIPPET_PAD_CHARS = 100  # text kept on each side of a relationship's supporting span
SNIPPET_MAX_CHARS = 400  # a long span is cut to this many characters

# String lengths are bounded so a small model cannot loop inside one string: a full report is at
# most ~3,300 characters (~850 tokens), near the default max_report_tokens=800. Findings come
# last so a truncated output can be repaired by dropping the unfinished finding.
REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 80},
        "summary": {"type": "string", "minLength": 1, "maxLength": 500},
        "rating": {"type": "number", "minimum": 0, "maximum": 10},
        "rating_explanation": {"type": "string", "maxLength": 150},
        "findings": {
            "type": "array",
            "minItems": 1,
            "maxItems": 5,
            "items": {
                "type": "object",
                "properties": {
                    "summary": {"type": "string", "minLength": 1, "maxLength": 120},
                    "explanation": {"type": "string", "minLength": 1, "maxLength": 400},
                },
                "required": ["summary", "explanation"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["title", "summary", "rating", "rating_explanation", "findings"],
    "additionalProperties": False,
}


def report_schema(max_report_tokens: int = 800) -> dict[str, Any]:
    """REPORT_SCHEMA with string and list bounds scaled to the output budget.

    A small base model fills every string up to its maxLength, so the bounds decide how long
    (and how slow) a report is; at 800 tokens this is REPORT_SCHEMA itself.
    """
    import copy

    f = min(1.0, max_report_tokens / 800)
    schema = copy.deepcopy(REPORT_SCHEMA)
    props = schema["properties"]
    finding = props["findings"]["items"]["properties"]
    for spec, floor in ((props["title"], 40), (props["summary"], 120), (props["rating_explanation"], 60),
                        (finding["summary"], 40), (finding["explanation"], 100)):
        spec["maxLength"] = max(floor, int(spec["maxLength"] * f))
    props["findings"]["maxItems"] = max(1, min(5, round(5 * f)))
    return schema

REPORT_SYSTEM_PROMPT = (
    "You are an analyst. You write short, factual reports about communities of entities in a "
    "knowledge graph, using only the data you are given."
)

# `{context}` is replaced literally (not str.format: the data may contain braces).
REPORT_USER_PROMPT = """Write a report about the community described by the data below, as JSON with:
- title: a short name for the community that names its key entities
- summary: an executive summary of how the community's entities relate
- rating: a number from 0 to 10 for how important the community is
- rating_explanation: one sentence explaining the rating
- findings: 1 to 5 key insights, each with a one-line summary and an explanation grounded in the data

End each explanation with its evidence as [Data: Entities (ids); Relationships (ids); Sources (ids)], using only ids listed in the tables below. Do not invent facts or ids.

{context}
"""

# chunk id -> (source hid, chunk text) or (source hid, chunk text, the chunk's start offset in its
# document). With the start, document-level provenance offsets locate the exact supporting span;
# without it the span is found by the entities' names.
SourceEntry = tuple

class ReportError(TinyGraphRAGError, RuntimeError):
    """The model's output could not be turned into a valid report."""


@dataclass(frozen=True)
class ReportContext:
    """The data section of one report prompt and the ids it contains (all citable ids)."""

    text: str
    n_tokens: int  # the whole prompt (system + user message contents), as counted by the LLM
    entity_ids: tuple[int, ...] = ()
    relationship_ids: tuple[int, ...] = ()
    source_ids: tuple[int, ...] = ()
    sub_report_ids: tuple[str, ...] = ()  # community ids whose reports stand in for their elements

    def citable(self) -> dict[CitationKind, set[int]]:
        return {
            "entities": set(self.entity_ids),
            "relationships": set(self.relationship_ids),
            "sources": set(self.source_ids),
        }


def report_messages(context_text: str) -> list[dict]:
    """The chat messages of one report request."""
    return [
        {"role": "system", "content": REPORT_SYSTEM_PROMPT},
        {"role": "user", "content": REPORT_USER_PROMPT.replace("{context}", context_text)},
    ]


def prompt_tokens(messages: Sequence[Mapping[str, Any]], count_tokens: Callable[[str], int]) -> int:
    return sum(count_tokens(m.get("content") or "") for m in messages)


# --------------------------------------------------------------------------------------------
# Context building


def _csv_row(values: Sequence[Any]) -> str:
    buf = io.StringIO()
    # Fields are flattened to one line: a row per line keeps the tables readable for the model.
    csv.writer(buf, lineterminator="").writerow([" ".join(str(v).split()) for v in values])
    return buf.getvalue()


def _mentions(value: Any) -> int:
    if isinstance(value, (int, float)):
        return int(value)
    try:
        return len(value)
    except TypeError:
        return 0


@dataclass(frozen=True)
class _Unit:
    """One thing the context can include: an edge (with its endpoints and source), an entity, or a report."""

    kind: str  # "edge", "entity", "report"
    key: Any  # (u, v, k) / node key / community id


@dataclass
class _Assembly:
    """The tables built from a list of units, in order of first appearance."""

    reports: list[tuple[str, Report]] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    sources: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # source hid -> spans


class _ContextBuilder:
    def __init__(
        self,
        graph: nx.MultiDiGraph,
        sources: Mapping[str, SourceEntry],
        count_tokens: Callable[[str], int],
        sub_reports: Mapping[str, Report],
    ) -> None:
        self.graph = graph
        self.sources = sources
        self.count_tokens = count_tokens
        self.sub_reports = sub_reports
        self._source_text = {int(entry[0]): entry[1] for entry in sources.values()}
        self._row_tokens: dict[str, int] = {}

    def row_tokens(self, row: str) -> int:
        """Tokens of one table row plus its newline; memoised (estimates revisit the same rows)."""
        if row not in self._row_tokens:
            self._row_tokens[row] = self.count_tokens(row) + 1
        return self._row_tokens[row]

    # -- elements ---------------------------------------------------------------------------
    def edge_units(self, edges: Sequence[tuple[str, str, str]]) -> list[_Unit]:
        """Edges by decreasing combined endpoint degree (the paper's prioritisation)."""

        def rank(e: tuple[str, str, str]) -> tuple:
            u, v, k = e
            return (-(self.graph.degree(u) + self.graph.degree(v)), self._edge_hid(e), e)

        return [_Unit("edge", e) for e in sorted(edges, key=rank)]

    def entity_units(self, nodes: Sequence[str]) -> list[_Unit]:
        def rank(n: str) -> tuple:
            return (-self.graph.degree(n), self._node_hid(n), n)

        return [_Unit("entity", n) for n in sorted(nodes, key=rank)]

    def _edge_data(self, e: tuple[str, str, str]) -> dict:
        u, v, k = e
        return self.graph.edges[u, v, k]

    def _edge_hid(self, e: tuple[str, str, str]) -> int:
        return int(self._edge_data(e).get("hid", -1))

    def _node_hid(self, n: str) -> int:
        return int(self.graph.nodes[n].get("hid", -1))

    def _edge_source(self, e: tuple[str, str, str]) -> tuple[int, tuple[int, int]] | None:
        """The first supporting chunk we have text for, and the span to quote from it."""
        for prov in self._edge_data(e).get("provenance") or ():
            _doc, chunk_id, start, end = prov
            entry = self.sources.get(chunk_id)
            if entry is None:
                continue
            hid, text = int(entry[0]), entry[1]
            span = None
            # Provenance offsets are document-level; the chunk's own start turns them into chunk offsets.
            chunk_start = entry[2] if len(entry) > 2 else None
            if chunk_start is not None:
                s, t = int(start) - int(chunk_start), int(end) - int(chunk_start)
                if 0 <= s <= t <= len(text):
                    span = (s, t)
            if span is None:
                span = self._locate(e, text)
            s, t = span
            t = min(t, s + SNIPPET_MAX_CHARS)
            return hid, (max(0, s - SNIPPET_PAD_CHARS), min(len(text), t + SNIPPET_PAD_CHARS))
        return None

    def _locate(self, e: tuple[str, str, str], text: str) -> tuple[int, int]:
        """Without the chunk's offset: the span between the endpoints' names, else the chunk's opening."""
        lowered = text.lower()
        found = []
        for n in e[:2]:
            data = self.graph.nodes[n]
            for name in [data.get("name", n), *(data.get("aliases") or ())]:  # aliases: merged surface forms
                name = str(name).lower()
                i = lowered.find(name) if name else -1
                if i >= 0:
                    found.append((i, i + len(name)))
                    break
        if found:
            return min(s for s, _ in found), max(t for _, t in found)
        return 0, min(len(text), SNIPPET_PAD_CHARS)

    # -- assembly -----------------------------------------------------------------------------
    def assemble(self, units: Sequence[_Unit]) -> _Assembly:
        a = _Assembly()
        seen: set[str] = set()

        def add_entity(n: str) -> None:
            if n not in seen:
                seen.add(n)
                a.entities.append(n)

        for unit in units:
            if unit.kind == "report":
                a.reports.append((unit.key, self.sub_reports[unit.key]))
            elif unit.kind == "entity":
                add_entity(unit.key)
            else:
                u, v, _k = unit.key
                add_entity(u)
                add_entity(v)
                a.edges.append(unit.key)
                src = self._edge_source(unit.key)
                if src is not None:
                    a.sources.setdefault(src[0], []).append(src[1])
        return a

    def snippet(self, hid: int, spans: list[tuple[int, int]]) -> str:
        text = self._source_text.get(hid, "")
        merged: list[list[int]] = []
        for s, e in sorted(spans):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        parts = []
        for s, e in merged:
            # Widen to word boundaries so no word is cut in half.
            while s > 0 and not text[s - 1].isspace():
                s -= 1
            while e < len(text) and not text[e].isspace():
                e += 1
            parts.append(("..." if s > 0 else "") + text[s:e].strip() + ("..." if e < len(text) else ""))
        return " ".join(parts)

    def entity_row(self, n: str) -> str:
        d = self.graph.nodes[n]
        return _csv_row([self._node_hid(n), d.get("name", n), d.get("type", ""), _mentions(d.get("mentions", 0))])

    def edge_row(self, e: tuple[str, str, str]) -> str:
        u, v, k = e
        d = self._edge_data(e)
        name = lambda n: self.graph.nodes[n].get("name", n)  # noqa: E731
        return _csv_row([self._edge_hid(e), name(u), name(v), d.get("label", k), _mentions(d.get("weight", 1))])

    def report_row(self, r: Report) -> str:
        findings = "; ".join(strip_citations(f.summary) for f in r.findings)
        return _csv_row([strip_citations(r.title), strip_citations(r.summary) + (f" Findings: {findings}" if findings else "")])

    def render(self, a: _Assembly) -> str:
        sections = []
        if a.reports:
            sections.append(
                "-----Reports-----\ntitle,summary\n" + "\n".join(self.report_row(r) for _, r in a.reports)
            )
        if a.entities:
            sections.append(
                "-----Entities-----\nid,entity,type,mentions\n" + "\n".join(self.entity_row(n) for n in a.entities)
            )
        if a.edges:
            sections.append(
                "-----Relationships-----\nid,source,target,relation,weight\n"
                + "\n".join(self.edge_row(e) for e in a.edges)
            )
        if a.sources:
            rows = [_csv_row([hid, self.snippet(hid, spans)]) for hid, spans in a.sources.items()]
            sections.append("-----Sources-----\nid,text\n" + "\n".join(rows))
        return "\n\n".join(sections)

    def measure(self, units: Sequence[_Unit]) -> tuple[str, int, _Assembly]:
        a = self.assemble(units)
        text = self.render(a)
        return text, prompt_tokens(report_messages(text), self.count_tokens), a

    # -- fitting ------------------------------------------------------------------------------
    def estimates(self, units: Sequence[_Unit]) -> list[int]:
        """Approximate tokens each unit adds (rows, a section header when first used)."""
        out = []
        seen_entities: set[str] = set()
        source_spans: dict[int, list[tuple[int, int]]] = {}
        source_cost: dict[int, int] = {}
        sections: set[str] = set()
        header = {"report": 12, "entity": 12, "edge": 14, "source": 8}
        for unit in units:
            cost = 0
            if unit.kind == "report":
                cost += self.row_tokens(self.report_row(self.sub_reports[unit.key]))
                kinds = ["report"]
            elif unit.kind == "entity":
                kinds = ["entity"] if unit.key not in seen_entities else []
                if kinds:
                    seen_entities.add(unit.key)
                    cost += self.row_tokens(self.entity_row(unit.key))
            else:
                u, v, _ = unit.key
                kinds = ["edge"]
                for n in (u, v):
                    if n not in seen_entities:
                        seen_entities.add(n)
                        kinds.append("entity")
                        cost += self.row_tokens(self.entity_row(n))
                cost += self.row_tokens(self.edge_row(unit.key))
                src = self._edge_source(unit.key)
                if src is not None:
                    hid, span = src
                    source_spans.setdefault(hid, []).append(span)
                    new = self.row_tokens(_csv_row([hid, self.snippet(hid, source_spans[hid])]))
                    cost += new - source_cost.get(hid, 0)
                    source_cost[hid] = new
                    kinds.append("source")
            for kind in kinds:
                if kind not in sections:
                    sections.add(kind)
                    cost += header[kind]
            out.append(cost)
        return out

    def fits_all(self, units: Sequence[_Unit], budget: int) -> tuple[str, int, _Assembly] | None:
        base = prompt_tokens(report_messages(""), self.count_tokens)
        if base + sum(self.estimates(units)) > budget * 1.1:  # clearly too big: skip the exact count
            return None
        text, n, a = self.measure(units)
        return (text, n, a) if n <= budget else None

    def fit_prefix(self, units: Sequence[_Unit], budget: int) -> tuple[str, int, _Assembly, int]:
        """The longest prefix of `units` whose prompt fits the budget (exactly counted)."""
        base = prompt_tokens(report_messages(""), self.count_tokens)
        total, k = base, 0
        for cost in self.estimates(units):
            if total + cost > budget:
                break
            total += cost
            k += 1
        text, n, a = self.measure(units[:k])
        if n > budget:
            # The per-row estimate was optimistic: binary search the largest prefix that fits
            # (prefix 0, the bare template, fits: the caller checked it).
            lo, hi = 0, k - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if self.measure(units[:mid])[1] <= budget:
                    lo = mid
                else:
                    hi = mid - 1
            k = lo
            text, n, a = self.measure(units[:k])
        return text, n, a, k


def build_report_context(
    community: Community,
    graph: nx.MultiDiGraph,
    sources: Mapping[str, SourceEntry],
    count_tokens: Callable[[str], int],
    budget_tokens: int,
    sub_reports: Mapping[str, Report] | None = None,
    *,
    communities: Mapping[str, Community] | None = None,
) -> ReportContext:
    """The data tables for one community's report, within `budget_tokens` for the whole prompt.

    `sources` maps chunk id -> (source hid, chunk text[, chunk start offset in its document]). `sub_reports` (community id -> Report)
    and `communities` (community id -> Community, to know each child's members) enable the
    substitution of sub-community reports at higher levels.
    """
    sub_reports = dict(sub_reports or {})
    builder = _ContextBuilder(graph, sources, count_tokens, sub_reports)
    base = prompt_tokens(report_messages(""), count_tokens)
    if base > budget_tokens:
        raise ContextWindowError(
            f"the report prompt template alone is {base} tokens, over the report context budget of "
            f"{budget_tokens} tokens. To fix: raise LLMConfig.n_ctx or lower LLMConfig.max_report_tokens."
        )

    edges = list(community.edges)
    covered = {n for u, v, _ in edges for n in (u, v)}
    elements = builder.edge_units(edges) + builder.entity_units([n for n in community.nodes if n not in covered])

    children = [
        communities[c]
        for c in community.children
        if communities is not None and c in communities and c in sub_reports
    ]
    chosen: tuple[str, int, _Assembly] | None = None
    if children:
        chosen = builder.fits_all(elements, budget_tokens)
        if chosen is None:
            # Replace the largest sub-communities' elements by their reports until the rest fits.
            children.sort(key=lambda c: (-len(c.nodes), -len(c.edges), c.id))
            for k in range(1, len(children) + 1):
                report_units, remaining = _substitute(builder, community, children[:k])
                chosen = builder.fits_all(report_units + remaining, budget_tokens)
                if chosen is not None:
                    break
            if chosen is None:
                # Even all sub-reports plus the leftover elements are too many: keep as much as
                # fits, reports (largest first) before the relationships that cross sub-communities.
                report_units, remaining = _substitute(builder, community, children)
                text, n, a, k = builder.fit_prefix(report_units + remaining, budget_tokens)
                chosen = (text, n, a) if k else None
    if chosen is None:
        text, n, a, k = builder.fit_prefix(elements, budget_tokens)
        if k == 0 and elements:
            need = builder.measure(elements[:1])[1]
            raise ContextWindowError(
                f"community {community.id}: even its first element needs a {need}-token prompt, over the "
                f"report context budget of {budget_tokens} tokens. To fix: raise LLMConfig.n_ctx or lower "
                f"LLMConfig.max_report_tokens."
            )
        chosen = (text, n, a)

    text, n, a = chosen
    return ReportContext(
        text=text,
        n_tokens=n,
        entity_ids=tuple(builder._node_hid(x) for x in a.entities),
        relationship_ids=tuple(builder._edge_hid(e) for e in a.edges),
        source_ids=tuple(a.sources),
        sub_report_ids=tuple(cid for cid, _ in a.reports),
    )


def _substitute(
    builder: _ContextBuilder, community: Community, replaced: Sequence[Community]
) -> tuple[list[_Unit], list[_Unit]]:
    """Report units for `replaced`, and the element units not inside any replaced community."""
    inside: dict[str, str] = {n: c.id for c in replaced for n in c.nodes}
    report_units = [_Unit("report", c.id) for c in replaced]
    edges = [e for e in community.edges if not (e[0] in inside and e[1] in inside and inside[e[0]] == inside[e[1]])]
    covered = {n for u, v, _ in edges for n in (u, v)}
    loose = [n for n in community.nodes if n not in inside and n not in covered]
    return report_units, builder.edge_units(edges) + builder.entity_units(loose)


# --------------------------------------------------------------------------------------------
# Parsing and repair


def _closing_candidates(text: str) -> list[str]:
    """Ways to end a truncated JSON text after a complete member, longest first."""
    stack: list[str] = []
    in_string = escape = False
    cuts: list[tuple[int, str]] = []
    for i, ch in enumerate(text):
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if stack:
                stack.pop()
            cuts.append((i + 1, "".join(reversed(stack))))
        elif ch == ",":
            cuts.append((i, "".join(reversed(stack))))
    return [text[:pos] + closers for pos, closers in reversed(cuts)]


def _loads_object(text: str) -> dict | None:
    text = text.strip()
    start = text.find("{")
    if start < 0:
        return None
    try:
        # strict=False: a raw newline inside a string is harmless; keep what the model wrote
        value, _ = json.JSONDecoder(strict=False).raw_decode(text[start:])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _clean(value: Any) -> str | None:
    return " ".join(value.split()) if isinstance(value, str) and value.strip() else None


def validate_report(data: Any) -> dict | None:
    """A report dict in REPORT_SCHEMA's shape (rating clamped to 0..10), or None if invalid."""
    if not isinstance(data, dict):
        return None
    title, summary = _clean(data.get("title")), _clean(data.get("summary"))
    rating = data.get("rating")
    explanation = data.get("rating_explanation")
    findings_in = data.get("findings")
    if title is None or summary is None or not isinstance(explanation, str):
        return None
    if isinstance(rating, bool) or not isinstance(rating, (int, float)) or rating != rating:
        return None
    if not isinstance(findings_in, list):
        return None
    findings = []
    for f in findings_in[:5]:
        if isinstance(f, dict) and _clean(f.get("summary")) and _clean(f.get("explanation")):
            findings.append({"summary": _clean(f["summary"]), "explanation": _clean(f["explanation"])})
    if not findings:
        return None
    return {
        "title": title,
        "summary": summary,
        "rating": float(min(10.0, max(0.0, rating))),
        "rating_explanation": " ".join(explanation.split()),
        "findings": findings,
    }


def parse_report_json(text: str, *, truncated: bool = False) -> tuple[dict, bool] | None:
    """(report dict, repaired?) from model output; a truncated text is closed after its last
    complete member, dropping an unfinished finding. None when nothing valid can be recovered."""
    if not truncated:
        valid = validate_report(_loads_object(text))
        if valid is not None:
            return valid, False
    start = text.find("{")
    if start < 0:
        return None
    for candidate in _closing_candidates(text[start:]):
        valid = validate_report(_loads_object(candidate))
        if valid is not None:
            return valid, True
    return None


# --------------------------------------------------------------------------------------------
# Generation


def _to_report(community: Community, data: dict, context: ReportContext) -> Report:
    citable = context.citable()

    def cite(text: str) -> str:
        return filter_citations(text, citable)

    return Report(
        community_id=community.id,
        level=community.level,
        title=strip_citations(data["title"]),
        summary=cite(data["summary"]),
        rating=data["rating"],
        rating_explanation=cite(data["rating_explanation"]),
        findings=tuple(Finding(cite(f["summary"]), cite(f["explanation"])) for f in data["findings"]),
    )


FALLBACK_EXPLANATION = "not rated: the model did not produce a valid report for this community"


def fallback_report(community: Community, context: ReportContext) -> Report:
    """A report written without the model, from the community's own context rows.

    Used only when the model's output is not a valid report twice; it says so in its rating
    explanation and cites only ids that are in the context, so search can still use it.
    """
    rows = _context_rows(context.text)
    entities = rows.get("Entities", [])[:8]
    relations = rows.get("Relationships", [])[:5]
    names = ", ".join(f"{r[1]} ({r[2]})" for r in entities if len(r) > 2) or f"{len(community.nodes)} entities"
    ent_ids = ", ".join(r[0] for r in entities if r and r[0].isdigit())
    findings = tuple(
        Finding(f"{r[1]} {r[3]} {r[2]}", f"{r[1]} {r[3]} {r[2]} [Data: Relationships ({r[0]})]")
        for r in relations if len(r) > 3 and r[0].isdigit()
    ) or (Finding("Members", f"{names}" + (f" [Data: Entities ({ent_ids})]" if ent_ids else "")),)
    first = entities[0][1] if entities and len(entities[0]) > 1 else "community"
    return Report(
        community_id=community.id,
        level=community.level,
        title=f"{first} and related entities",
        summary=f"A community of {len(community.nodes)} entities: {names}."
        + (f" [Data: Entities ({ent_ids})]" if ent_ids else ""),
        rating=0.0,
        rating_explanation=FALLBACK_EXPLANATION,
        findings=findings,
    )


def _context_rows(text: str) -> dict[str, list[list[str]]]:
    """The CSV tables of a report context, by section name ("Entities", "Relationships", ...)."""
    tables: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    header = False
    for line in text.splitlines():
        m = re.fullmatch(r"-----(\w+)-----", line.strip())
        if m:
            current = tables.setdefault(m.group(1), [])
            header = True
            continue
        if current is None or not line.strip():
            continue
        if header:  # the column names
            header = False
            continue
        current.append(next(csv.reader([line])))
    return tables


def generate_report(
    community: Community,
    context: ReportContext,
    llm: LLM,
    *,
    max_report_tokens: int = 800,
) -> Report:
    """One report from its context: constrained generation, one retry if cut off, then repair."""
    messages = report_messages(context.text)
    schema = report_schema(max_report_tokens)
    out = llm.complete(messages, schema=schema, max_tokens=max_report_tokens, temperature=0.0)
    if out.finish_reason == "length":
        bigger = min(2 * max_report_tokens, llm.n_ctx - out.prompt_tokens)
        if bigger > max_report_tokens:
            log.info("report for %s hit max_tokens=%d; retrying with %d", community.id, max_report_tokens, bigger)
            out = llm.complete(messages, schema=schema, max_tokens=bigger, temperature=0.0)
    parsed = parse_report_json(out.text, truncated=out.finish_reason == "length")
    if parsed is None and out.finish_reason != "length":
        # A grammar-constrained output can still end early (a small model emitting its end
        # token); one more try with a different budget, which is also a different cache key.
        retry = llm.complete(messages, schema=schema, max_tokens=max_report_tokens + 64, temperature=0.0)
        parsed = parse_report_json(retry.text, truncated=retry.finish_reason == "length")
    if parsed is None:
        log.warning(
            "the model's report for community %s is not a valid report (finish_reason=%r, %d tokens): %r; "
            "storing a report that lists the community's members instead (rating 0). A stronger "
            "(instruction-tuned) model or a larger LLMConfig.max_report_tokens avoids this.",
            community.id, out.finish_reason, out.completion_tokens, out.text[:120],
        )
        return fallback_report(community, context)
    data, repaired = parsed
    if repaired:
        log.warning("report for %s was cut off or malformed; kept its complete part", community.id)
    return _to_report(community, data, context)


def generate_reports(
    graph: nx.MultiDiGraph,
    communities: Sequence[Community],
    sources: Mapping[str, SourceEntry],
    llm: LLM,
    *,
    max_context_tokens: int | None = None,
    max_report_tokens: int = 800,
    progress: bool = False,
) -> list[Report]:
    """Reports for all communities (returned in the order given), deepest level first so that
    parents can use their children's reports. Identical reruns are answered by the LLM's cache."""
    from tqdm.auto import tqdm

    budget = max_context_tokens or llm.n_ctx - max_report_tokens - CHAT_TEMPLATE_MARGIN
    if max_context_tokens and max_context_tokens + max_report_tokens > llm.n_ctx:
        raise ContextWindowError(
            f"max_context_tokens={max_context_tokens} plus max_report_tokens={max_report_tokens} exceed "
            f"n_ctx={llm.n_ctx}. To fix: raise LLMConfig.n_ctx or lower one of them."
        )
    if budget <= 0:
        raise ContextWindowError(
            f"no room for a report prompt: n_ctx={llm.n_ctx} minus max_report_tokens={max_report_tokens} "
            f"minus {CHAT_TEMPLATE_MARGIN} template tokens leaves {budget}. To fix: raise LLMConfig.n_ctx "
            f"or lower LLMConfig.max_report_tokens."
        )
    by_id = {c.id: c for c in communities}
    reports: dict[str, Report] = {}
    order = sorted(communities, key=lambda c: (-c.level, c.id))
    for community in tqdm(order, desc="community reports", disable=not progress, unit="report"):
        if len(community.children) == 1 and community.children[0] in reports:
            child = by_id[community.children[0]]
            if child.nodes == community.nodes:
                # Carried down unchanged: the same members deserve the same report (no model call).
                r = reports[child.id]
                reports[community.id] = Report(
                    community.id, community.level, r.title, r.summary, r.rating, r.rating_explanation, r.findings
                )
                continue
        subs = {c: reports[c] for c in community.children if c in reports}
        context = build_report_context(
            community, graph, sources, llm.count_tokens, budget, subs, communities=by_id
        )
        reports[community.id] = generate_report(community, context, llm, max_report_tokens=max_report_tokens)
    log.info("%d reports (%d model calls, %d cache hits)", len(reports), llm.calls, llm.cache_hits)
    return [reports[c.id] for c in communities]
