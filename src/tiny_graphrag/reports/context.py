"""The data tables of one community report prompt, within a token budget (GraphRAG §3.1.5).

Leaf communities are described by their elements (entities, relationships, source snippets), most connected
relationships first, until the budget is reached. A higher-level community uses its own elements when they all fit;
otherwise sub-community reports replace the elements of those sub-communities, largest first, until the rest fits.
Tables are packed like search contexts (`tables.pack_table`), and the whole prompt is counted with the LLM's own
tokenizer, template included, so the budget is never exceeded."""

from __future__ import annotations

import functools
import math
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from tiny_graphrag.backends.llm import ContextWindowError
from tiny_graphrag.citations import CitationKind, strip_citations
from tiny_graphrag.index.graph import node_chunks
from tiny_graphrag.records import Community, Report
from tiny_graphrag.reports.prompt import prompt_tokens, report_messages
from tiny_graphrag.tables import longest_fit, pack_table, row

SNIPPET_PAD_CHARS = 100  # text kept on each side of a relationship's supporting span
SNIPPET_MAX_CHARS = 400  # a long span is cut to this many characters
_FIX = "To fix: raise LLMConfig.n_ctx or lower LLMConfig.max_report_tokens."

Edge = tuple[str, str, str]  # (head key, tail key, edge key)
Unit = tuple[str, Any]  # ("edge", Edge) | ("entity", node key) | ("report", community id)


@dataclass(frozen=True)
class SourceText:
    """A chunk's text as report contexts quote it, under its source id.

    With `start` (the chunk's offset in its document), document-level provenance offsets locate the exact supporting
    span; without it the span is found by the entities' names."""

    sid: int
    text: str
    start: int | None = None


@dataclass(frozen=True)
class ReportContext:
    """The data section of one report prompt and what its tables hold (all citable ids)."""

    text: str
    n_tokens: int  # the whole prompt (system + user message contents), as counted by the LLM
    entities: tuple[tuple[int, str, str], ...] = ()  # (id, name, type) of each Entities row
    relationships: tuple[tuple[int, str, str, str], ...] = ()  # (id, source, target, relation)
    sources: tuple[tuple[int, str], ...] = ()  # (id, the text shown) of each Sources row
    sub_report_ids: tuple[str, ...] = ()  # community ids whose reports stand in for their elements
    own_names: tuple[str, ...] = ()  # the community's entities most its own first (own_names), for a fallback title

    @property
    def source_ids(self) -> tuple[int, ...]:
        return tuple(s[0] for s in self.sources)

    def citable(self) -> dict[CitationKind, set[int]]:
        return {kind: {row[0] for row in getattr(self, kind)} for kind in ("entities", "relationships", "sources")}


def _mentions(value: Any) -> int:
    if isinstance(value, (int, float)):
        return int(value)
    try:
        return len(value)
    except TypeError:
        return 0


@dataclass
class _Builder:
    """Renders lists of units as tables and finds the most of them that fit the budget."""

    graph: nx.MultiDiGraph
    sources: Mapping[str, SourceText]
    count: Callable[[str], int]
    sub_reports: Mapping[str, Report]
    budget: int

    def __post_init__(self) -> None:
        self.base = prompt_tokens(report_messages(""), self.count)  # render() checks the whole prompt as asked
        self._text = {s.sid: s.text for s in self.sources.values()}

    # -- elements ---------------------------------------------------------------------------
    def elements(self, edges: Sequence[Edge], nodes: Sequence[str]) -> list[Unit]:
        """Edges by decreasing combined endpoint degree (the paper's prioritisation), then the
        nodes no edge brings in, by decreasing degree."""
        degree = self.graph.degree
        covered = {n for u, v, _ in edges for n in (u, v)}
        ranked = sorted(edges, key=lambda e: (-(degree(e[0]) + degree(e[1])), self.edge_hid(e), e))
        loose = sorted((n for n in nodes if n not in covered), key=lambda n: (-degree(n), self.node_hid(n), n))
        return [("edge", e) for e in ranked] + [("entity", n) for n in loose]

    def edge_hid(self, e: Edge) -> int:
        return int(self.graph.edges[e].get("hid", -1))

    def node_hid(self, n: str) -> int:
        return int(self.graph.nodes[n].get("hid", -1))

    def _name(self, n: str) -> str:
        return str(self.graph.nodes[n].get("name", n))

    def _edge_source(self, e: Edge) -> tuple[int, tuple[int, int]] | None:
        """The first supporting chunk we have text for, and the span to quote from it."""
        for _doc, chunk_id, start, end in self.graph.edges[e].get("provenance") or ():
            if (source := self.sources.get(chunk_id)) is None:
                continue
            text, span = source.text, None
            # Provenance offsets are document-level; the chunk's own start turns them into chunk offsets.
            if source.start is not None:
                s, t = int(start) - int(source.start), int(end) - int(source.start)
                if 0 <= s <= t <= len(text):
                    span = (s, t)
            s, t = span or self._locate(e, text)
            t = min(t, s + SNIPPET_MAX_CHARS)
            return source.sid, (max(0, s - SNIPPET_PAD_CHARS), min(len(text), t + SNIPPET_PAD_CHARS))
        return None

    def _locate(self, e: Edge, text: str) -> tuple[int, int]:
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

    def _snippet(self, sid: int, spans: list[tuple[int, int]]) -> str:
        text = self._text.get(sid, "")
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

    # -- tables -------------------------------------------------------------------------------
    def _tables(self, units: Sequence[Unit]) -> list[tuple[str, str, list[tuple[str, Any]]]]:
        """(title, header, rows with their payloads) of each table, rows in order of first appearance."""
        reports: list[tuple[str, Any]] = []
        entities: dict[str, tuple[str, Any]] = {}
        edges: list[tuple[str, Any]] = []
        spans: dict[int, list[tuple[int, int]]] = {}

        def add_entity(n: str) -> None:
            if n not in entities:
                d = self.graph.nodes[n]
                payload = (self.node_hid(n), self._name(n), str(d.get("type", "")))
                entities[n] = (row(*payload, _mentions(d.get("mentions", 0))), payload)

        for kind, key in units:
            if kind == "report":
                r = self.sub_reports[key]
                findings = "; ".join(strip_citations(f.summary) for f in r.findings)
                summary = strip_citations(r.summary) + (f" Findings: {findings}" if findings else "")
                reports.append((row(strip_citations(r.title), summary), key))
            elif kind == "entity":
                add_entity(key)
            else:
                e: Edge = key
                add_entity(e[0])
                add_entity(e[1])
                d = self.graph.edges[e]
                payload = (self.edge_hid(e), self._name(e[0]), self._name(e[1]), str(d.get("label", e[2])))
                edges.append((row(*payload, _mentions(d.get("weight", 1))), payload))
                if (src := self._edge_source(e)) is not None:
                    spans.setdefault(src[0], []).append(src[1])
        snippets = {sid: self._snippet(sid, s) for sid, s in spans.items()}
        return [
            ("Reports", "title|summary", reports),
            ("Entities", "id|entity|type|mentions", list(entities.values())),
            ("Relationships", "id|source|target|relation|weight", edges),
            ("Sources", "id|text", [(row(sid, text), (sid, text)) for sid, text in snippets.items()]),
        ]

    def render(self, units: Sequence[Unit], budget: int) -> ReportContext | None:
        """The context of all `units`, or None when its prompt would be over `budget`."""
        left = budget - self.base
        sections: list[str] = []
        kept: dict[str, list] = {}
        for title, header, rows in self._tables(units):
            if not rows:
                continue
            text, payloads, n = pack_table(title, header, rows, left, self.count)
            if len(payloads) < len(rows):
                return None  # the packer had to drop a row: these units do not fit
            sections.append(text)
            kept[title] = payloads
            left -= n
        text = "\n\n".join(sections)
        n = prompt_tokens(report_messages(text, grounded="Sources" in kept), self.count)
        if n > budget:  # the tables fit one by one, not together with the separators and template
            return None
        entities, relationships, sources, reports = (
            tuple(kept.get(t, ())) for t in ("Entities", "Relationships", "Sources", "Reports")
        )
        return ReportContext(text, n, entities, relationships, sources=sources, sub_report_ids=reports)

    def fit_prefix(self, units: Sequence[Unit]) -> ReportContext | None:
        """The context of the longest prefix of `units` that fits (None if not even the first does).

        A longer prefix never has a shorter prompt, so the longest one is found by bisection."""
        if (best := self.render(units, self.budget)) is not None:
            return best
        k = longest_fit(len(units) - 1, lambda m: self.render(units[:m], self.budget) is not None)
        return self.render(units[:k], self.budget) if k else None


def build_report_context(
    community: Community,
    graph: nx.MultiDiGraph,
    sources: Mapping[str, SourceText],
    count_tokens: Callable[[str], int],
    budget_tokens: int,
    sub_reports: Mapping[str, Report] | None = None,
    *,
    communities: Mapping[str, Community] | None = None,
) -> ReportContext:
    """The data tables for one community's report, within `budget_tokens` for the whole prompt.

    `sources` maps chunk id -> SourceText. `sub_reports` (community id -> Report) and `communities` (community id ->
    Community, to know each child's members) enable the substitution of sub-community reports at higher levels."""
    sub_reports = dict(sub_reports or {})
    # Fitting renders the same rows again and again: count each text once.
    count = functools.lru_cache(maxsize=4096)(count_tokens)
    builder = _Builder(graph, sources, count, sub_reports, budget_tokens)
    if builder.base > budget_tokens:
        raise ContextWindowError(
            f"the report prompt template alone is {builder.base} tokens, over the report "
            f"context budget of {budget_tokens} tokens. {_FIX}"
        )

    elements = builder.elements(community.edges, community.nodes)
    known = communities or {}
    children = [known[c] for c in community.children if c in known and c in sub_reports]
    chosen = builder.render(elements, budget_tokens) if children else None
    if children and chosen is None:
        # Replace the largest sub-communities' elements by their reports until the rest fits.
        children.sort(key=lambda c: (-len(c.nodes), -len(c.edges), c.id))
        for k in range(1, len(children) + 1):
            chosen = builder.render(_substitute(builder, community, children[:k]), budget_tokens)
            if chosen is not None:
                break
        else:
            # Even all sub-reports plus the leftover elements are too many: keep as much as
            # fits, reports (largest first) before the relationships that cross sub-communities.
            chosen = builder.fit_prefix(_substitute(builder, community, children))
    if chosen is None:
        chosen = builder.fit_prefix(elements)
    if chosen is None:
        need = builder.render(elements[:1], sys.maxsize)  # an unlimited budget: always rendered
        assert need is not None
        raise ContextWindowError(
            f"community {community.id}: even its first element needs a {need.n_tokens}-token "
            f"prompt, over the report context budget of {budget_tokens} tokens. {_FIX}"
        )
    return chosen


def own_names(community: Community, graph: nx.MultiDiGraph, sizes: Counter[str], top: int = 8) -> tuple[str, ...]:
    """The `top` names of a community's entities, most its own first: an entity counts each chunk naming it by the share
    of that chunk's entities the community holds, times log(chunks / chunks naming it) (tf-idf). A name in most chunks
    ("United States") says little of which community this is (by degree, the demo had "Michelle, USA and America")."""
    chunks = {n: node_chunks(graph, n) for n in community.nodes}  # each member's provenance read once
    held = Counter(c for cs in chunks.values() for c in cs)

    def score(n: str) -> float:
        return sum(held[c] / sizes[c] for c in chunks[n]) * math.log(max(len(sizes), 1) / max(len(chunks[n]), 1))

    ranked = sorted(community.nodes, key=lambda n: (-score(n), -graph.degree(n), n))
    return tuple(dict.fromkeys(str(graph.nodes[n].get("name", n)) for n in ranked))[:top]


def _substitute(builder: _Builder, community: Community, replaced: Sequence[Community]) -> list[Unit]:
    """Report units for `replaced`, then the element units not inside any replaced community."""
    inside: dict[str, str] = {n: c.id for c in replaced for n in c.nodes}
    edges = [e for e in community.edges if not (e[0] in inside and e[1] in inside and inside[e[0]] == inside[e[1]])]
    loose = [n for n in community.nodes if n not in inside]
    return [("report", c.id) for c in replaced] + builder.elements(edges, loose)
