"""Extraction through Ray Data actors: 1 vs 2 actors against in-process, same chunks, same run.

`python -m bench --only ray`. A local Ray instance with the machine's CPUs; each actor reserves
an equal share of them (one torch thread per CPU). With 2 cores, 2 actors can at best match one
process using both cores with 2 torch threads: the point is that the Ray path costs little over
in-process and that adding actors adds throughput where there are cores (or GPUs) for them.
Actor start-up (a fresh Python process importing torch and loading the models) is included in
each Ray time, as a user pays it; it is also measured alone on a two-chunk run.
"""

from __future__ import annotations

import os
from typing import Any

from .common import Context, cut_text, obama_text, ratio, rnd, stopwatch


def run(ctx: Context) -> dict[str, Any]:
    import ray

    from tiny_graphrag.config import ChunkingConfig, ExtractionConfig
    from tiny_graphrag.extract.gliner import GlinerGlirelExtractor, clear_model_cache
    from tiny_graphrag.extract.ray_executor import RayExecutor
    from tiny_graphrag.indexing.chunking import chunk_documents, count_tokens
    from tiny_graphrag.indexing.documents import document_from_text
    from tiny_graphrag.schema import Schema

    from .extraction import build_models

    kind = os.environ.get("BENCH_RAY_MODELS", "tiny")  # "real-arch" for DeBERTa-sized models (slow here)
    models = build_models(ctx.work.parent / "models", kind)
    words = {"tiny": 3000, "real-arch": 1000}[kind]
    text = cut_text(obama_text(), words)
    chunks = chunk_documents(
        [document_from_text(text, source="obama")], ChunkingConfig(max_tokens=64, overlap_tokens=8)
    )
    n_tokens = count_tokens(text)
    cfg = ExtractionConfig(
        gliner_model=str(models["gliner"]),
        glirel_model=str(models["glirel"]),
        device="cpu",
        entity_threshold=0.9,
        batch_size=8,
    )
    extractor = GlinerGlirelExtractor(Schema.preset("general"), cfg)
    extractor.extract(chunks[:1])  # load in process
    with stopwatch() as t_local:
        local = extractor.extract(chunks)
    cpus = os.cpu_count() or 2
    ray.init(num_cpus=cpus, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    out: dict[str, Any] = {
        "models": kind,
        "chunks": len(chunks),
        "tokens": n_tokens,
        "ray_cpus": cpus,
        "in_process_seconds": rnd(t_local["s"]),
        "in_process_tokens_per_s": rnd(n_tokens / t_local["s"], 1),
    }
    try:
        for actors in (1, 2):
            executor = RayExecutor(concurrency=actors, batch_size=8)
            with stopwatch() as t_start:
                list(executor.extract(extractor, chunks[:2]))
            with stopwatch() as t_ray:
                got = dict(executor.extract(extractor, chunks))

            def spans(xs):
                return [[(m.start, m.end, m.type) for m in x.entities] for x in xs]

            same = spans(got[i] for i in range(len(chunks))) == spans(local)
            out[f"actors_{actors}"] = {
                "seconds": rnd(t_ray["s"]),
                "tokens_per_s": rnd(n_tokens / t_ray["s"], 1),
                "startup_two_chunks_seconds": rnd(t_start["s"]),
                "cpus_per_actor": executor.num_cpus,
                "same_entities_as_in_process": same,
                "ratio_vs_in_process": ratio(t_local["s"], t_ray["s"]),
            }
        out["ratio_2_vs_1_actors"] = ratio(out["actors_1"]["seconds"], out["actors_2"]["seconds"])
    finally:
        ray.shutdown()
        clear_model_cache()
    return out


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [
        ("sample", f"{r['tokens']} tokens, {r['chunks']} chunks, {r['models']} models, {r['ray_cpus']} CPUs"),
        ("in process", f"{r['in_process_tokens_per_s']} tok/s ({r['in_process_seconds']} s)"),
    ]
    for a in (1, 2):
        x = r[f"actors_{a}"]
        rows.append(
            (
                f"Ray, {a} actor(s)",
                f"{x['tokens_per_s']} tok/s ({x['seconds']} s, start-up {x['startup_two_chunks_seconds']} s); "
                f"vs in process {x['ratio_vs_in_process']}x; same entities: {x['same_entities_as_in_process']}",
            )
        )
    rows.append(("RATIO Ray 2 actors / 1 actor", f"{r['ratio_2_vs_1_actors']}x"))
    return rows
