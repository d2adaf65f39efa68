"""Notebook displays of real objects: a search result's linked citations, the tables, the plot."""

from __future__ import annotations

import html
import re
from dataclasses import replace

import pytest
from _names_index import build_names_index

from tiny_graphrag import load_index
from tiny_graphrag.outputs.notebook import SizePlot
from tiny_graphrag.search.config import LocalConfig, SearchConfig
from tiny_graphrag.search.engine import QueryEngine


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_names_index(tmp_path_factory.mktemp("nb") / "names")


def test_search_result_links_each_citation_to_its_text(built):
    with QueryEngine(built.path, config=SearchConfig(reader="large")) as qe:
        # The real context (no model call), with GraphRAG's entity table so an entity can be cited.
        ctx = qe.local_search("朱元璋", only_context=True, config=LocalConfig(entity_table=True))
    chunk, entity = ctx.sources.chunks[0], ctx.sources.entities[0]
    result = replace(ctx, answer=f'He <was> "born" [Data: Sources ({chunk.id}); Entities ({entity.id}, 99999)].')
    page = result._repr_html_()
    assert 'He &lt;was&gt; "born"' in page  # the answer is text, never markup
    links = re.findall(r"href='#([^']+)'", page)
    assert len(links) == 2 and links[0].endswith(f"-sources-{chunk.id}")  # 99999 resolves to nothing: no link
    for anchor in links:
        [item] = re.findall(rf"<li id='{anchor}'>(.*?)</li>", page, re.S)
        assert html.escape(chunk.text if "sources" in anchor else entity.text) in item
    assert f"<pre style='white-space:pre-wrap'>{html.escape(ctx.context)}</pre>" in page
    assert page.count("<details") == 2  # cited texts, and the folded context


def test_tables_and_plot(built):
    store = load_index(built.path)  # the user's handle shows itself; the storage class shows nothing
    summary = built._repr_html_()
    assert "build summary" in summary and f"<td style='text-align:left'>{built.summary.chunks}</td>" in summary
    table = store._repr_html_()
    levels = sorted({c.level for c in store.communities()})
    assert all(f"level C{lvl}" in table for lvl in levels) and "Person" in table
    plot = SizePlot(store)
    assert plot._repr_png_().startswith(b"\x89PNG")
    assert {lvl: sum(s) for lvl, s in plot.sizes.items()} == {lvl: store.graph().number_of_nodes() for lvl in levels}
    view = store.view(top=5)._repr_html_()
    assert view.startswith('<iframe srcdoc="') and "vis.Network" in view and "&quot;" in view
