"""How results look in Jupyter: HTML for search results, summary tables, the inline view, a size plot.

The classes call these from their `_repr_html_`; nothing here imports IPython, so importing this module (or the classes)
outside a notebook costs nothing. All text is HTML-escaped."""

from __future__ import annotations

import html
import io
import itertools
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from tiny_graphrag.citations import DATA_BLOCK, DATA_PART, KINDS
from tiny_graphrag.errors import require

_ids = itertools.count()  # anchors must be unique among the outputs of one notebook


def _table(rows: Iterable[tuple[Any, Any]], caption: str) -> str:
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
        f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
        for k, v in rows
    )
    return f"<table><caption style='text-align:left'><b>{html.escape(caption)}</b></caption>{body}</table>"


def _counts(counts: dict) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=lambda x: -x[1])) or "none"


def community_sizes(store) -> dict[int, list[int]]:
    """level -> the sizes of its communities, largest first, levels in order."""
    sizes: dict[int, list[int]] = {}
    for c in store.communities():
        sizes.setdefault(c.level, []).append(len(c.nodes))
    return {lvl: sorted(s, reverse=True) for lvl, s in sorted(sizes.items())}


def search_result_html(result) -> str:
    """The answer with each cited id linked to the cited text below it, and the context folded away."""
    prefix = f"tgr{next(_ids)}"
    src = result.sources
    items = {
        "sources": {
            c.id: f"{c.location if c.unit else f'{c.source or c.doc_id}, characters {c.start}-{c.end}'}"
            f"{f' ({c.about})' if c.about else ''}: {c.text}"
            for c in src.chunks
        },
        "reports": {r.id: f"{r.label(result.details.get('summaries'))}: {r.text}" for r in src.reports},
        "entities": {e.id: f"{e.name} ({e.type}): {e.text}" for e in src.entities},
        "relationships": {r.id: f"{r.head} -{r.label}-> {r.tail}: {r.text}" for r in src.relationships},
    }

    def link_part(p: re.Match) -> str:  # "Kind (1, 2)" of a [Data: ...] block, each known id a link
        kind = KINDS.get(p.group(1).lower(), "").lower()

        def link(i: re.Match) -> str:
            known = int(i.group()) in items.get(kind, {})
            return f"<a href='#{prefix}-{kind}-{i.group()}'>{i.group()}</a>" if known else i.group()

        ids = re.sub(r"\d+", link, p.group(2))
        return f"{p.group(1)} ({ids})"

    answer = DATA_BLOCK.sub(lambda m: DATA_PART.sub(link_part, m.group(0)), html.escape(result.answer, quote=False))
    cited = [
        f"<li id='{prefix}-{kind}-{i}'><b>{kind.capitalize()} {i}</b>: {html.escape(items[kind][i])}</li>"
        for kind, ids in result.citations().items()
        for i in ids
        if i in items.get(kind, {})
    ]
    notes = "".join(f"<p><i>note: {html.escape(n)}</i></p>" for n in result.notes)
    return (
        f"<div><p><b>{html.escape(result.mode)} search:</b> {html.escape(result.query)}</p>"
        f"<p style='white-space:pre-wrap'>{answer}</p>{notes}"
        + (f"<details open><summary>cited ({len(cited)})</summary><ol>{''.join(cited)}</ol></details>" if cited else "")
        + f"<details><summary>context the model saw ({result.context_tokens} tokens, {result.llm_calls} "
        f"LLM calls)</summary><pre style='white-space:pre-wrap'>{html.escape(result.context)}</pre></details></div>"
    )


def summary_html(summary) -> str:
    """A BuildSummary as a table."""
    rows = [
        ("documents", summary.documents),
        ("chunks", summary.chunks),
        ("entities", f"{sum(summary.entities_per_type.values())} ({_counts(summary.entities_per_type)})"),
        ("relations", f"{sum(summary.relations_per_label.values())} ({_counts(summary.relations_per_label)})"),
        ("merged aliases", summary.merged_aliases),
        ("communities per level", ", ".join(f"C{k}={v}" for k, v in summary.communities_per_level.items()) or "none"),
        ("reports", summary.reports),
        ("model calls", _counts(summary.model_calls)),
        ("seconds per stage", ", ".join(f"{k}={v:.1f}" for k, v in summary.seconds_per_stage.items())),
    ]
    rows += [("warning", w) for w in summary.warnings]
    return _table(rows, "build summary")


def index_html(store) -> str:
    """An IndexStore as a table: its counts, entity types and community levels."""
    m, graph = store.manifest, store.graph()
    rows = [("index", store.path), ("built", f"{m.get('created')} by tiny-graphrag {m.get('library_version')}")]
    rows += [(k, v) for k, v in (m.get("counts") or {}).items()]
    rows.append(("entity types", _counts(Counter(d["type"] for _, d in graph.nodes(data=True)))))
    rows += [
        (f"level C{lvl}", f"{len(s)} communities, sizes {min(s)}-{max(s)}") for lvl, s in community_sizes(store).items()
    ]
    return _table(rows, "tiny-graphrag index")


class InlineView:
    """The interactive view (view.py) inside a notebook cell, as an iframe holding the whole page."""

    def __init__(self, page: str, height: int = 640):
        self.page, self.height = page, height

    def _repr_html_(self) -> str:
        return (
            f'<iframe srcdoc="{html.escape(self.page, quote=True)}" style=\'width:100%;height:{self.height}px;'
            "border:1px solid #ccc'></iframe>"
        )


class SizePlot:
    """Community sizes per level: a matplotlib Figure (`.figure`), shown as a PNG in notebooks."""

    def __init__(self, store):
        Figure = require("matplotlib.figure", "view", "The community-size plot").Figure  # no pyplot: no global state
        self.sizes = community_sizes(store)
        self.figure = Figure(figsize=(7, 3))
        ax = self.figure.add_subplot()
        for lvl, s in self.sizes.items():
            ax.plot(range(1, len(s) + 1), s, marker="o", label=f"level {lvl} ({len(s)} communities)")
        ax.set_xlabel("community, largest first")
        ax.set_ylabel("entities")
        ax.set_title("community sizes per level" if self.sizes else "no communities in this index")
        if self.sizes:
            ax.legend()

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()
