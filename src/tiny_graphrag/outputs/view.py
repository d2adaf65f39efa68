"""One self-contained HTML page to look at an index: the graph, its communities and their reports.

The page works offline: vis-network's JavaScript (the copy the pyvis package ships) is inlined, and nothing is fetched.
pyvis's own page template is not used because it always loads Bootstrap from a CDN. All text reaches the page as JSON
and is put in with textContent, so names with quotes, markup or any script are shown as they are.

Entities are coloured by their community at `level`, sized by degree, edges labelled by relation. A click (or the search
box) shows an entity's description, the text spans it comes from and its community's report. A large graph is cut to the
`top` entities by degree (or to one community), and the page says so."""

from __future__ import annotations

import json
import logging
import os
import re
from importlib import resources
from pathlib import Path

from tiny_graphrag.errors import InputError, listing, require
from tiny_graphrag.index.placement import check_target, write_atomic
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.outputs.parquet import entity_description

log = logging.getLogger(__name__)

PALETTE = (
    "#4e79a7 #f28e2b #e15759 #76b7b2 #59a14f #edc948 #b07aa1 #ff9da7 #9c755f #bab0ac #1f77b4 #2ca02c #d62728 #9467bd "
    "#8c564b #17becf"
).split()
_SPANS_PER_NODE = 5  # keeps a big graph's page small; the exports hold every span
_CONTEXT = 80  # characters shown around a span


def view_data(store: IndexStore, *, level: int = 0, top: int = 200, community: str | None = None) -> dict:
    """What the page shows: nodes, edges, communities at `level`, and a sentence on any cut."""
    if top < 1:  # here, so a notebook's Index.view is refused like the command line
        raise InputError(f"--top {top}: show at least one entity")
    graph, coms = store.graph(), store.communities()
    levels = sorted({c.level for c in coms})
    if coms and level not in levels:
        raise InputError(f"--level {level}: this index has community levels {levels}; choose one of them")
    at_level = [c for c in coms if c.level == level]
    keys = list(graph.nodes)
    if community is not None:
        if (chosen := next((c for c in coms if c.id == community), None)) is None:
            raise InputError(
                f"no community '{community}' in {store.path}; its communities at level {level}: "
                f"{listing(c.id for c in at_level)}"
            )
        keys = list(chosen.nodes)
    degree = dict(graph.degree())
    kept = sorted(keys, key=lambda k: (-degree[k], k))[:top]
    cut = f"Showing all {len(kept)} entities"
    if len(kept) < len(keys):
        cut = f"Showing the {len(kept)} of {len(keys)} entities with the most relations"
    cut += f" of community {community} (the index has {graph.number_of_nodes()})" if community else ""
    home = {k: c.id for c in at_level for k in c.nodes}
    ranked = sorted(at_level, key=lambda c: -len(c.nodes))  # the largest communities get the first colours
    colour = {c.id: PALETTE[n % len(PALETTE)] for n, c in enumerate(ranked)}
    docs = {d.id: d for d in store.documents()}
    nodes = []
    for k in kept:
        d = graph.nodes[k]
        spans = [_span(docs[doc_id], start, end) for doc_id, _, start, end in d["provenance"][:_SPANS_PER_NODE]]
        nodes.append(
            {
                "id": d["hid"],
                "label": d["name"],
                "value": degree[k],
                "community": home.get(k),
                "color": colour.get(home.get(k, ""), "#999999"),
                "type": d["type"],
                "description": entity_description(d),
                "spans": spans,
                "more_spans": max(0, len(d["provenance"]) - _SPANS_PER_NODE),
            }
        )
    shown = set(kept)
    edges = [
        {"from": graph.nodes[u]["hid"], "to": graph.nodes[v]["hid"], "label": d["label"], "value": d["weight"]}
        for u, v, d in graph.edges(data=True)
        if u in shown and v in shown
    ]
    reports = {r.community_id: r for r in store.reports()}
    communities = [
        {
            "id": c.id,
            "size": len(c.nodes),
            "color": colour[c.id],
            "title": reports[c.id].title if c.id in reports else f"Community {n}",
            "report": reports[c.id].text() if c.id in reports else "(no report for this community)",
        }
        for n, c in enumerate(ranked)
    ]
    return dict(
        index=str(store.path), level=level, levels=levels, cut=cut, nodes=nodes, edges=edges, communities=communities
    )


def _span(doc, start: int, end: int) -> dict:
    """A mention in its document: "report.pdf, p. 12", its offsets within the page (row, message),
    and the text around it."""
    text, (unit, at) = doc.text, doc.unit_at(start, end) or ("", 0)
    return {
        "source": (Path(doc.source).name or doc.id) + (f", {unit}" if unit else ""),
        "start": start - at,
        "end": end - at,
        "before": _squeeze(text[max(0, start - _CONTEXT) : start]),
        "span": text[start:end],
        "after": _squeeze(text[end : end + _CONTEXT]),
    }


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", " ", text)  # line breaks of the context collapse; the span itself stays exact


def vis_network_script(purpose: str = "The interactive view") -> str:
    """vis-network's JavaScript, the copy the pyvis package ships (so nothing is fetched from a CDN)."""
    pyvis = require("pyvis", "view", purpose)
    return resources.files(pyvis).joinpath("lib/vis-9.1.2/vis-network.min.js").read_text(encoding="utf-8")


def view_html(store: IndexStore, **options) -> str:
    """The page as one string (see the module docstring)."""
    script = vis_network_script()
    data = json.dumps(view_data(store, **options), ensure_ascii=False).replace("<", "\\u003c")
    template = resources.files(__package__).joinpath("view_page.html").read_text(encoding="utf-8")
    # `</script` cannot occur in the library (checked), and the data has every "<" escaped.
    if "</script" in script.lower():
        raise RuntimeError("the vis-network script cannot be inlined: it contains '</script'")
    return template.replace("/*VIS*/", script, 1).replace("/*DATA*/null", data, 1)


def write_view(
    index: str | os.PathLike[str] | IndexStore,
    out: str | os.PathLike[str] = "graph.html",
    *,
    level: int = 0,
    top: int = 200,
    community: str | None = None,
    force: bool = False,
) -> Path:
    """Write the page to `out` (refused if it exists, unless `force`); returns its path."""
    store = index if isinstance(index, IndexStore) else IndexStore.open(index)
    path = check_target(Path(out), store.path, force, None)
    page = view_html(store, level=level, top=top, community=community)
    write_atomic(path, lambda fh: fh.write(page))
    log.info("wrote the view of %s to %s", store.path, path)
    return path
