"""RAPTOR trees (Sarthi et al. 2024): cluster the chunks, summarize each cluster, repeat on the summaries.

The leaves are the index's chunks with the embeddings the build already made (never embedded again). Each layer is
clustered (tree_cluster.py), each cluster summarized by the LLM through the call cache (so a rebuild or a resumed build
repeats no model call), and the summaries are embedded and clustered in turn, until a layer has at most `stop_nodes`
nodes or `max_layers` layers exist. A cluster of one node gets no summary (it would restate its child): the node goes up
to the next layer as it is."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from tiny_graphrag.backends.embed import TextEmbedder
from tiny_graphrag.backends.llm import CHAT_TEMPLATE_MARGIN, LLM, CachedLLM, ContextWindowError
from tiny_graphrag.config import TreeConfig
from tiny_graphrag.indexing.tree_cluster import cluster_layer
from tiny_graphrag.records import Chunk, TreeNode
from tiny_graphrag.tables import fit_text

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.index.store import IndexStore

log = logging.getLogger(__name__)

# RAPTOR's summarization prompt (SummarizationModels.py), which its paper's numbers come from.
SUMMARY_SYSTEM = "You are a helpful assistant."
SUMMARY_USER = "Write a summary of the following, including as many key details as possible:\n\n{text}"
RETRY_EXTRA_TOKENS = 64  # a summary cut off (or empty) is asked again with this much more room
_SENTENCE_END = re.compile(r"[.!?][\"')\]]?(?=\s|$)")


def summary_messages(text: str) -> list[dict]:
    return [
        {"role": "system", "content": SUMMARY_SYSTEM},
        {"role": "user", "content": SUMMARY_USER.replace("{text}", text)},
    ]


def cluster_budget(llm: LLM, config: TreeConfig) -> int:
    """Tokens of node text one summary prompt may hold: the configured budget, within n_ctx."""
    fixed = sum(llm.count_tokens(m["content"]) for m in summary_messages(""))
    room = llm.n_ctx - config.summary_tokens - RETRY_EXTRA_TOKENS - CHAT_TEMPLATE_MARGIN - fixed
    if room < 64:
        raise ContextWindowError(
            f"n_ctx={llm.n_ctx} leaves {max(room, 0)} tokens for a tree summary's text after "
            f"{config.summary_tokens} output tokens: raise --n-ctx (LLMConfig.n_ctx) or lower TreeConfig.summary_tokens"
        )
    return min(config.cluster_tokens, room)


def _whole_sentences(text: str) -> str:
    """A cut-off summary up to its last complete sentence (all of it when none is complete)."""
    ends = list(_SENTENCE_END.finditer(text))
    return text[: ends[-1].end()].strip() if ends else text.strip()


def summarize(texts: Sequence[str], llm: LLM, budget: int, max_tokens: int) -> tuple[str, bool]:
    """(summary, fallback) of one cluster. A cut-off or empty output is retried once with more
    room (a different cache key); never blank: without a usable output the text is extracted."""
    body = fit_text("\n\n".join(t.strip() for t in texts), budget, llm.count_tokens)
    messages = summary_messages(body)
    out = llm.complete(messages, max_tokens=max_tokens, temperature=0.0)
    text = out.text.strip()
    if out.finish_reason == "length" or not text:
        retry = llm.complete(messages, max_tokens=max_tokens + RETRY_EXTRA_TOKENS, temperature=0.0)
        again = retry.text.strip()
        text = again if again and retry.finish_reason != "length" else _whole_sentences(again or text)
    if text:
        return text, False
    log.warning("the model wrote no summary for a cluster of %d nodes; storing its opening text instead", len(texts))
    return fit_text(body, max_tokens, llm.count_tokens), True


def build_tree(
    chunks: Sequence[Chunk],
    chunk_vectors: np.ndarray,
    llm: LLM,
    embedder: TextEmbedder,
    config: TreeConfig,
    *,
    progress: bool = False,
) -> tuple[list[TreeNode], np.ndarray]:
    """The summary nodes (lowest layer first) and their embeddings, one row per node."""
    budget = cluster_budget(llm, config)
    order = {c.id: i for i, c in enumerate(chunks)}
    # The working layer: at first the chunks, as leaves (layer 0); then each layer's summaries and promoted nodes.
    current = [TreeNode(c.id, 0, (), (c.id,), c.text, llm.count_tokens(c.text)) for c in chunks]
    vectors = np.asarray(chunk_vectors, dtype=np.float32)
    nodes: list[TreeNode] = []
    rows: list[np.ndarray] = []
    for layer in range(1, config.max_layers + 1):
        if len(current) < 2 or (layer > 1 and len(current) <= config.stop_nodes):
            break
        clusters = cluster_layer(vectors, [n.tokens for n in current], budget, config)
        if all(len(c) == 1 for c in clusters):
            break  # nothing grouped: another layer would restate this one
        made: list[TreeNode] = []
        up: list[int | TreeNode] = []  # the next layer: a promoted node's row here, or a new summary
        for members in tqdm(clusters, desc=f"tree layer {layer}", unit="summary", disable=not progress, leave=False):
            if len(members) == 1:  # promoted unchanged: no model call
                up.append(members[0])
                continue
            kids = [current[m] for m in members]
            text, fallback = summarize([k.text for k in kids], llm, budget, config.summary_tokens)
            covered = tuple(sorted({c for k in kids for c in k.chunks}, key=order.__getitem__))
            children = tuple(k.id for k in kids)
            node = TreeNode(f"L{layer}.{len(made)}", layer, children, covered, text, llm.count_tokens(text), fallback)
            made.append(node)
            up.append(node)
        embedded = embedder.embed([n.text for n in made])
        rows.append(embedded)
        nodes += made
        row_of = {n.id: embedded[i] for i, n in enumerate(made)}
        log.info("tree layer %d: %d clusters, %d summaries", layer, len(clusters), len(made))
        vectors = np.asarray([vectors[u] if isinstance(u, int) else row_of[u.id] for u in up], dtype=np.float32)
        current = [current[u] if isinstance(u, int) else u for u in up]
    matrix = np.concatenate(rows) if rows else np.zeros((0, embedder.dim), dtype=np.float32)
    return nodes, matrix.astype(np.float32)


def tree_stage(
    store: IndexStore,
    chunks: Sequence[Chunk],
    llm: CachedLLM,
    embedder: TextEmbedder,
    config: TreeConfig,
    *,
    progress: bool = False,
) -> dict[str, Any]:
    """Build the tree of a store being written, save it, and describe it for the manifest."""
    calls, hits = llm.calls, llm.cache_hits
    chunk_ids, matrix = store.vectors("chunks")
    by_id = {c.id: c for c in chunks}
    nodes, rows = build_tree([by_id[i] for i in chunk_ids], matrix, llm, embedder, config, progress=progress)
    store.save_tree(nodes)
    store.save_vectors("tree", [n.id for n in nodes], rows)
    return {
        "nodes_per_layer": {"0": len(chunks), **Counter(str(n.layer) for n in nodes)},
        "summary_tokens": sum(n.tokens for n in nodes),
        "fallback_summaries": sum(n.fallback for n in nodes),
        "llm_calls": llm.calls - calls,
        "llm_cached": llm.cache_hits - hits,
        "config": asdict(config),
        "note": None
        if nodes
        else (
            "the corpus has a single chunk: the tree has no summaries, and tree search answers from the chunk"
            if len(chunks) < 2
            else "no cluster of two or more chunks formed: the tree has no summaries"
        ),
    }
