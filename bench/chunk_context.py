"""Why the default chunk size: how many gold relations a chunk can even see.

A relation model reads one chunk at a time, so a relation whose head and tail are never
mentioned in the same chunk cannot be extracted. On Re-DocRED dev (500 Wikipedia documents,
gold entity mentions and relation triples) this counts, for each chunking, the share of gold
triples with at least one head mention and one tail mention inside a single chunk. The seed's
200-character chunks are compared with our sentence-aware, word-token-bounded chunks.
No model is involved: the numbers are exact and repeat from run to run.

    python -m bench --only chunk_context      (or: python -m bench.chunk_context)
"""

from __future__ import annotations

import json
from typing import Any

from tiny_graphrag.config import ChunkingConfig
from tiny_graphrag.indexing.chunking import chunk_document
from tiny_graphrag.indexing.documents import document_from_text

from .common import REDOCRED, Context

SIZES = (64, 128, 256, 384)  # word tokens per chunk; 256 is the default (ChunkingConfig)


def _doc_and_mentions(item: dict) -> tuple[str, list[list[tuple[int, int]]]]:
    """The document text (tokens joined by spaces, sentences by newlines) and char spans per entity."""
    offsets: list[list[tuple[int, int]]] = []
    text_parts: list[str] = []
    pos = 0
    for sent in item["sents"]:
        starts = []
        for tok in sent:
            starts.append((pos, pos + len(tok)))
            text_parts.append(tok + " ")
            pos += len(tok) + 1
        offsets.append(starts)
    text = "".join(text_parts)
    spans = [
        [(offsets[m["sent_id"]][m["pos"][0]][0], offsets[m["sent_id"]][m["pos"][1] - 1][1]) for m in ent]
        for ent in item["vertexSet"]
    ]
    return text, spans


def _char_chunks(text: str, size: int = 200) -> list[tuple[int, int]]:
    """The seed's chunking: fixed windows of `size` characters, no overlap."""
    return [(i, min(i + size, len(text))) for i in range(0, len(text), size)]


def _visible(chunks: list[tuple[int, int]], head: list[tuple[int, int]], tail: list[tuple[int, int]]) -> bool:
    return any(
        any(s <= hs and he <= e for hs, he in head) and any(s <= ts and te <= e for ts, te in tail) for s, e in chunks
    )


def measure(n_docs: int | None = None, sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    """Share of gold triples visible in one chunk, per chunking, over the first n_docs documents."""
    data = json.loads((REDOCRED / "dev_revised.json").read_text(encoding="utf-8"))[:n_docs]
    totals = {"seed-200-chars": 0, **{f"sentences-{n}-tokens": 0 for n in sizes}}
    n_chunks = dict.fromkeys(totals, 0)
    n_triples = 0
    for item in data:
        text, spans = _doc_and_mentions(item)
        layouts = {"seed-200-chars": _char_chunks(text)}
        doc = document_from_text(text, source=item["title"])
        for n in sizes:
            layouts[f"sentences-{n}-tokens"] = [
                (c.start, c.end) for c in chunk_document(doc, ChunkingConfig(max_tokens=n, overlap_tokens=n // 8))
            ]
        for label in item["labels"]:
            n_triples += 1
            for name, chunks in layouts.items():
                totals[name] += _visible(chunks, spans[label["h"]], spans[label["t"]])
        for name, chunks in layouts.items():
            n_chunks[name] += len(chunks)
    return {
        "documents": len(data),
        "gold_triples": n_triples,
        "triples_visible_in_one_chunk": totals,
        "share_of_triples_visible_in_one_chunk": {k: round(100 * v / n_triples, 1) for k, v in totals.items()},
        "chunks": n_chunks,
    }


def run(ctx: Context) -> dict[str, Any]:
    return measure(ctx.mode.redocred_docs or None)


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("data", f"Re-DocRED dev: {r['documents']} documents, {r['gold_triples']} gold triples")]
    for name, share in r["share_of_triples_visible_in_one_chunk"].items():
        rows.append((name, f"{share}% of gold triples visible in one chunk ({r['chunks'][name]} chunks)"))
    return rows


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
