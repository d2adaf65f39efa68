"""RAPTOR tree search: rank tree nodes (summaries and chunks) by similarity, pack them, answer once.

- collapsed (RAPTOR's default and its best): every node of every layer competes for the budget;
- traversal: from the top layer down, the `top_k` most similar nodes of each layer, then their children; the nodes kept
  on the way are packed, most similar first.
Summaries are shown as a "Reports" table and chunks as a "Sources" table, so citations use the existing kinds; the
result's sources also hold every chunk a shown summary covers, and `details["summaries"]` maps each summary's id to
those chunks' ids, so a cited summary resolves to document text."""

from __future__ import annotations

import numpy as np

from tiny_graphrag.search.answer import SearchRun
from tiny_graphrag.search.config import TreeSearchConfig
from tiny_graphrag.search.context import REPORT_HEADER, SOURCE_HEADER, BuiltContext, join_sections, source_chunk
from tiny_graphrag.search.index import SearchIndex
from tiny_graphrag.search.passages import answer_from_passages
from tiny_graphrag.search.report_index import TreeIndex
from tiny_graphrag.search.result import SearchResult, SourceReport, Sources, StreamingResult
from tiny_graphrag.search.vectors import VectorIndex
from tiny_graphrag.tables import Count, pack, row

TREE_CITATIONS = "[Data: Sources (ids); Reports (ids)]"


def rank_nodes(
    tree: TreeIndex, chunk_vectors: VectorIndex, qvec: np.ndarray, config: TreeSearchConfig
) -> list[tuple[str, float]]:
    """Node ids (summary or chunk), most similar first, as the strategy selects them."""
    sims = dict(zip(tree.vectors.ids, map(float, tree.vectors.similarities(qvec))))
    sims.update(zip(chunk_vectors.ids, map(float, chunk_vectors.similarities(qvec))))
    if config.strategy == "collapsed":
        chosen = list(sims)
    else:
        chosen, layer = [], list(tree.roots)
        while layer:
            best = sorted(layer, key=lambda i: -sims[i])[: config.top_k]
            chosen += best
            layer = list(dict.fromkeys(c for i in best if i in tree.nodes for c in tree.nodes[i].children))
    return sorted(((i, sims[i]) for i in dict.fromkeys(chosen)), key=lambda x: -x[1])


def _pack(items: list[tuple[str, str, object]], budget: int, count: Count) -> tuple[str, list, int]:
    """Rows of the Reports and Sources tables in rank order while they fit (a table's header counted
    with its first row), measured whole at the end."""
    heads = {"Reports": f"-----Reports-----\n{REPORT_HEADER}", "Sources": f"-----Sources-----\n{SOURCE_HEADER}"}

    def cost(item: tuple[str, str, object], kept: list) -> int:
        kind, text, _ = item
        return count(text + "\n") + (0 if any(k == kind for k, _, _ in kept) else count(heads[kind] + "\n\n"))

    def render(kept: list) -> str:
        rows = {k: [t for kind, t, _ in kept if kind == k] for k in heads}
        return join_sections([heads[k] + "\n" + "\n".join(r) for k, r in rows.items() if r])

    return pack(items, cost, render, budget, count)


def build_tree_context(
    index: SearchIndex, tree: TreeIndex, ranked: list[tuple[str, float]], budget: int, count: Count
) -> BuiltContext:
    """The ranked nodes that fit in `budget`: summaries as Reports rows, chunks as Sources rows."""
    items: list[tuple[str, str, object]] = []
    rid = 0  # summaries are numbered 1..n in the order shown
    chunk_of = {c.id: c for c in index.store.chunks_by_id([n for n, _ in ranked if n not in tree.nodes])}
    for nid, _ in ranked:
        node = tree.nodes.get(nid)
        if node is None:
            chunk, sid = chunk_of[nid], index.sid_of[nid]
            items.append(("Sources", row(sid, chunk.text), source_chunk(chunk, sid)))
        else:
            rid += 1
            title = f"summary of {len(node.chunks)} passages (layer {node.layer})"
            items.append(
                ("Reports", row(rid, title, node.text), SourceReport(rid, nid, node.layer, title, 0.0, node.text))
            )
    text, kept, n = _pack(items, budget, count)
    shown = Sources(
        chunks=tuple(p for kind, _, p in kept if kind == "Sources"),
        reports=tuple(p for kind, _, p in kept if kind == "Reports"),
    )
    # Chunks reached, in rank order: a chunk shown, or the chunks a shown summary covers.
    covers = ([p.chunk_id] if kind == "Sources" else tree.nodes[p.community_id].chunks for kind, _, p in kept)
    reached = list(dict.fromkeys(c for chunk_ids in covers for c in chunk_ids))
    covered = [source_chunk(c, index.sid_of[c.id]) for c in index.store.chunks_by_id(reached)]
    summaries = {s.id: [index.sid_of[c] for c in tree.nodes[s.community_id].chunks] for s in shown.reports}
    sources = shown.merged(Sources(chunks=tuple(covered)))
    return BuiltContext(text, sources, n, budget, details={"summaries": summaries, "reached": reached})


def search_tree(
    index: SearchIndex, run: SearchRun, config: TreeSearchConfig, *, stream: bool
) -> SearchResult | StreamingResult:
    tree = index.tree
    room = min(run.answer_room(TREE_CITATIONS), config.context_tokens)
    with run.timer("embed_query"):
        qvec = index.embed_query(run.query)
    with run.timer("retrieve"):
        ranked = rank_nodes(tree, index.chunk_vectors, qvec, config)
    relevant = bool(ranked) and ranked[0][1] >= config.min_similarity
    if not tree.nodes:
        run.notes.append("the index's tree has no summaries (too few chunks): tree search ranked the chunks alone")
    if run.reader == "small":  # the chunks the ranked nodes reach, in rank order (a summary: those it covers)
        reached = dict.fromkeys(c for n, _ in ranked for c in (tree.nodes[n].chunks if n in tree.nodes else [n]))
        run.details.update(strategy=config.strategy, ranking=ranked[:10])
        return answer_from_passages(index, run, list(reached), qvec, stream=stream, relevant=relevant)
    with run.timer("context"):
        built = build_tree_context(index, tree, ranked if relevant else [], room, run.counter)
    run.details.update(budget=room, strategy=config.strategy, ranking=ranked[:10], **built.details)
    return run.answer_context(built, TREE_CITATIONS, stream=stream, cite=("Sources", "Reports"))
