"""The small reader's end of naive, local and tree search: ranked passages -> evidence -> one answer-only call.

Each mode ranks passages its own way; from there a small reader's path is the same: the best sentences of those passages
(evidence.py, with a second retrieval for the question joined with its best sentence), then SearchRun.answer_evidence
(the call, and the citations attached)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np

from tiny_graphrag.search.answer import SearchRun
from tiny_graphrag.search.evidence import select_evidence
from tiny_graphrag.search.index import SearchIndex
from tiny_graphrag.search.result import SearchResult, StreamingResult


def answer_from_passages(
    index: SearchIndex, run: SearchRun, ids: Sequence[str], qvec: np.ndarray, *, stream: bool, relevant: bool = True
) -> SearchResult | StreamingResult:
    """`ids`: the mode's passages, best first; not `relevant`: none is read, the no-data answer names the closest."""
    chunks = index.store.chunks_by_id(ids[: run.evidence.passages]) if relevant else []
    with run.timer("context"):
        evidence = select_evidence(
            run.query,
            qvec,
            chunks,
            title_of=index.title_of,
            embed=index.embed_texts,
            count=run.counter,
            budget=int(run.details["budget"]),
            config=run.evidence,
            more=partial(index.passages_for, where=run.where) if chunks else None,
        )
    near = chunks[:3] or index.store.chunks_by_id(ids[:3])
    closest = [f"{index.title_of(c)}: {' '.join(c.text[:60].split())}".lstrip(": ") for c in near]
    return run.answer_evidence(evidence, index.sid_of, stream=stream, closest=closest)
