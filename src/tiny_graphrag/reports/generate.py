"""Community reports (GraphRAG paper §3.1.5): constrained generation, retries and the fallback.

The request is in `reports.prompt`, the data tables in `reports.context`, the parsing and repair of the model's JSON in
`reports.parse`; this module runs them for every community, deepest level first so that parents can use their children's
reports."""

from __future__ import annotations

import functools
import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

import networkx as nx
from tqdm.auto import tqdm

from tiny_graphrag.backends.llm import CHAT_TEMPLATE_MARGIN, LLM, CachedLLM, ContextWindowError
from tiny_graphrag.citations import DATA_BLOCK, filter_citations, strip_citations
from tiny_graphrag.index.graph import node_chunks
from tiny_graphrag.indexing.chunking import split_sentences
from tiny_graphrag.records import Community, Finding, Report
from tiny_graphrag.reports.context import ReportContext, SourceText, build_report_context, own_names
from tiny_graphrag.reports.parse import parse_report_json, trim_to_bounds
from tiny_graphrag.reports.prompt import report_messages, report_schema

log = logging.getLogger(__name__)

FALLBACK_EXPLANATION = "not rated: the model did not produce a valid report for this community"
QUOTE_CHARS = 320  # a grounded finding quotes at most about two sentences of its source row


def quote(text: str) -> str:
    """Whole sentences of a Sources row (a snippet around relationships, "..." where it was cut),
    up to QUOTE_CHARS characters, without a cut sentence at either end when a whole one remains; a
    longer first sentence is cut at a word with "…"."""
    spans = text.split("... ...")  # a row that quotes several spans: the first, on one line
    text = " ".join(spans[0].split())
    cut_start, cut_end = text.startswith("..."), text.endswith("...") or len(spans) > 1
    text = text.removeprefix("...").removesuffix("...").strip()
    sentences = split_sentences(text)
    if cut_start and len(sentences) > 1:
        sentences = sentences[1:]
    if cut_end and len(sentences) > 1:
        sentences = sentences[:-1]
    if not sentences:
        return text
    start = sentences[0][0]
    kept = [e for _, e in sentences if e - start <= QUOTE_CHARS]
    if kept:
        return text[start : kept[-1]]
    return text[start : start + QUOTE_CHARS].rsplit(" ", 1)[0] + "…"


def _to_report(community: Community, data: dict, context: ReportContext) -> Report:
    cite = functools.partial(filter_citations, citable=context.citable())
    shown = dict(context.sources)
    names = [name for _, name, _ in context.entities]
    findings, quoted = [], set()
    for f in data["findings"]:
        if "explanation" in f:
            findings.append(Finding(cite(f["summary"]), cite(f["explanation"])))
        elif f["source"] in shown and f["source"] not in quoted:  # a small model picks one row twice
            quoted.add(f["source"])
            findings.append(Finding(cite(f["summary"]), f"{quote(shown[f['source']])} [Data: Sources ({f['source']})]"))
    return Report(
        community_id=community.id,
        level=community.level,
        title=community_title(strip_citations(data["title"]), context.own_names or names),
        summary=community_summary(cite(data["summary"]), names, findings),
        rating=data["rating"],
        rating_explanation=cite(data["rating_explanation"]),
        findings=tuple(findings),
    )


# What a cut-off or empty line ends on; what a 0.5B model wrote when it had nothing to say.
_DANGLING = re.compile(r"(?:…|\.\.\.|[,;:(-]|\b(?:and|or|the|a|an|of|in|on|to|for|with|by|at|is|are|was))$", re.I)
_FILLER = re.compile(r"^\s*(?:the|this)\s+community\b", re.I)


def meaningful(text: str, names: Sequence[str], *, sentence: bool) -> bool:
    """A line a reader can use: it names one of the community's entities (`names`, most important
    first), is not cut off (a `sentence` ends with . ! ? or a quote) and is not the model's filler
    ("The community is highly important as ..."). A 0.5B model wrote titles like ",", "The
    Community", "skinny repeal," and summaries cut mid-clause (bench/RESULTS.md)."""
    text = strip_citations(text).strip()
    words = set(re.findall(r"\w{3,}", text.lower()))
    named = any(words & set(re.findall(r"\w{3,}", n.lower())) - {"the", "and"} for n in names[:8])
    ended = text.endswith((".", "!", "?", '"', "”")) if sentence else not _DANGLING.search(text)
    return bool(text) and named and ended and not _FILLER.match(text)


def community_title(title: str, names: Sequence[str]) -> str:
    """The model's title when meaningful, else its community's first three entities' names: `names` most its own first
    (ReportContext.own_names: with hubs first the demo had "Michelle, USA and America" and kept "The hour itself")."""
    cleaned = title.strip().rstrip(",;:").strip()
    if not names or meaningful(cleaned, names, sentence=False):
        return cleaned.strip(" ,;:.-") or title
    return names_title(list(dict.fromkeys(names))[:3])


def names_title(names: Sequence[str]) -> str:
    """ "A", "A and B", "A, B and C": a title made of names (a community's, or the names a global answer's theme quotes)."""
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else (names[0] if names else "")


def community_summary(summary: str, names: Sequence[str], findings: Sequence[Finding]) -> str:
    """The model's summary when meaningful, else the first sentence its first finding quotes (the
    community's own text, cited)."""
    quoted = next((f.explanation for f in findings if meaningful(f.explanation, names, sentence=False)), "")
    if not names or not quoted or meaningful(summary, names, sentence=True):
        return summary
    cite = DATA_BLOCK.search(quoted)
    first = split_sentences(strip_citations(quoted))[0]
    return strip_citations(quoted)[first[0] : first[1]] + (cite.group(0) if cite else "")


def fallback_report(community: Community, context: ReportContext) -> Report:
    """A report written without the model, from the entities and relationships its context held.

    Used only when the model's output is not a valid report twice; it says so in its rating explanation and its
    `fallback` flag, and cites only ids that are in the context, so search can still use it."""
    entities = context.entities[:8]
    relations = [r for r in context.relationships[:5] if r[0] >= 0]
    names = ", ".join(f"{name} ({kind})" for _, name, kind in entities) or f"{len(community.nodes)} entities"
    ent_ids = ", ".join(str(hid) for hid, _, _ in entities if hid >= 0)
    cite = f" [Data: Entities ({ent_ids})]" if ent_ids else ""
    findings = tuple(
        Finding(f"{head} {label} {tail}", f"{head} {label} {tail} [Data: Relationships ({hid})]")
        for hid, head, tail, label in relations
    ) or (Finding("Members", names + cite),)
    return Report(
        community_id=community.id,
        level=community.level,
        title=f"{(context.own_names or [e[1] for e in entities] or ['community'])[0]} and related entities",
        summary=f"A community of {len(community.nodes)} entities: {names}.{cite}",
        rating=0.0,
        rating_explanation=FALLBACK_EXPLANATION,
        findings=findings,
        fallback=True,
    )


def generate_report(community: Community, context: ReportContext, llm: LLM, *, max_report_tokens: int = 800) -> Report:
    """One report from its context: constrained generation, one retry if cut off, then repair."""
    messages = report_messages(context.text, grounded=bool(context.sources))
    schema = report_schema(max_report_tokens, context.source_ids)
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
            "(instruction-tuned) model or a larger --report-max-tokens avoids this.",
            community.id,
            out.finish_reason,
            out.completion_tokens,
            out.text[:120],
        )
        return fallback_report(community, context)
    data, repaired = parsed
    data = trim_to_bounds(data, schema)
    if repaired:
        log.warning("report for %s was cut off or malformed; kept its complete part", community.id)
    return _to_report(community, data, context)


def generate_reports(
    graph: nx.MultiDiGraph,
    communities: Sequence[Community],
    sources: Mapping[str, SourceText],
    llm: CachedLLM,
    *,
    max_context_tokens: int | None = None,
    max_report_tokens: int = 800,
    min_size: int = 1,
    progress: bool = False,
) -> list[Report]:
    """Reports for the communities of at least `min_size` entities (in the order given), deepest level first so that
    parents can use their children's reports. Identical reruns are answered by the LLM's cache."""
    budget = max_context_tokens or llm.n_ctx - max_report_tokens - CHAT_TEMPLATE_MARGIN
    if max_context_tokens and max_context_tokens + max_report_tokens > llm.n_ctx:
        raise ContextWindowError(
            f"max_context_tokens={max_context_tokens} plus max_report_tokens={max_report_tokens} exceed "
            f"n_ctx={llm.n_ctx}. To fix: raise --n-ctx (LLMConfig.n_ctx) or lower --report-context-tokens or "
            "--report-max-tokens."
        )
    if budget <= 0:
        raise ContextWindowError(
            f"no room for a report prompt: n_ctx={llm.n_ctx} minus max_report_tokens={max_report_tokens} "
            f"minus {CHAT_TEMPLATE_MARGIN} template tokens leaves {budget}. To fix: raise --n-ctx "
            f"(LLMConfig.n_ctx) or lower --report-max-tokens (LLMConfig.max_report_tokens)."
        )
    by_id = {c.id: c for c in communities}
    reports: dict[str, Report] = {}
    # Small communities cost a model call each and add little to a global answer: a user may skip them.
    order = sorted((c for c in communities if len(c.nodes) >= min_size), key=lambda c: (-c.level, c.id))
    sizes = Counter(c for n in graph for c in node_chunks(graph, n))  # entities each chunk names, for own_names
    for community in tqdm(order, desc="community reports", disable=not progress, unit="report"):
        if len(community.children) == 1 and community.children[0] in reports:
            child = by_id[community.children[0]]
            if child.nodes == community.nodes:
                # Carried down unchanged: the same members deserve the same report (no model call).
                reports[community.id] = replace(reports[child.id], community_id=community.id, level=community.level)
                continue
        subs = {c: reports[c] for c in community.children if c in reports}
        context = build_report_context(community, graph, sources, llm.count_tokens, budget, subs, communities=by_id)
        context = replace(context, own_names=own_names(community, graph, sizes))
        reports[community.id] = generate_report(community, context, llm, max_report_tokens=max_report_tokens)
    log.info("%d reports (%d model calls, %d cache hits)", len(reports), llm.calls, llm.cache_hits)
    return [reports[c.id] for c in communities if c.id in reports]
