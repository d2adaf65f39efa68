"""The GPU-relevant benchmarks in one command: `python -m bench.gpu [--device cuda|cpu] [--out ...]`.

For when a GPU machine is lent; it runs on CPU too (smaller samples by default). On the chosen
device, in one process:
- extraction: our batched GLiNER+GLiREL path against the seed's one-chunk-at-a-time path, with
  the real-architecture random-weight models of bench.extraction (fp16 on CUDA, as the library
  does), plus our path at batch sizes 1, 8 and 32;
- embedding: all-MiniLM-L6-v2 batched against one call per chunk;
- LLM offload: Gemma 3 270M through llama-cpp-python with all layers on the GPU against none,
  when this llama-cpp-python was built with GPU offload (CMAKE_ARGS="-DGGML_CUDA=on"); else the
  CPU numbers and a note.
Prints a table and writes JSON (default bench/out/gpu.json). Needs the same environment as
`python -m bench` (a CUDA build of torch for the GPU numbers).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from .common import ROOT, dump_json, git_commit, machine_info, obama_text, quiet_logs, ratio, rnd, stopwatch, cut_text


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def extraction(device: str, words: int, models_root: Path, seed_words: int) -> dict[str, Any]:
    from tiny_graphrag.chunking import chunk_documents, count_tokens
    from tiny_graphrag.config import ChunkingConfig, ExtractionConfig
    from tiny_graphrag.documents import document_from_text
    from tiny_graphrag.extract.gliner import GlinerGlirelExtractor, clear_model_cache
    from tiny_graphrag.schema import Schema

    from .extraction import SeedPath, build_models, calibrate_threshold, direct_entity_count, reference_mentions, seed_chunks

    models = build_models(models_root, "real-arch")
    schema = Schema.preset("general")
    text = cut_text(obama_text(), words)
    n_tokens = count_tokens(text)
    chunks = chunk_documents([document_from_text(text, source="obama-sample")], ChunkingConfig())
    target = reference_mentions(chunks, schema)
    threshold = calibrate_threshold(models["gliner"], [c.text for c in chunks], list(schema.entity_types), target)
    out: dict[str, Any] = {"sample_tokens": n_tokens, "chunks": len(chunks), "entity_threshold": rnd(threshold, 6),
                           "reference_mentions_spacy": target, "ours_by_batch_size": {}}
    for bs in (1, 8, 32):
        cfg = ExtractionConfig(extractor="gliner", gliner_model=str(models["gliner"]), glirel_model=str(models["glirel"]),
                               entity_threshold=threshold, device=device, batch_size=bs)
        ex = GlinerGlirelExtractor(schema, cfg)
        ex.extract(chunks[:1])  # load + warm-up
        _sync(device)
        with stopwatch() as t:
            res = ex.extract(chunks)
            _sync(device)
        out["ours_by_batch_size"][str(bs)] = {"seconds": rnd(t["s"]), "tokens_per_s": rnd(n_tokens / t["s"], 1),
                                               "entities": sum(len(r.entities) for r in res)}
        out["dtype"] = ex.describe()["dtype"]
    clear_model_cache()
    gc.collect()
    # the seed, on a prefix of the same sample (it is much slower)
    seed_text = cut_text(text, seed_words)
    seed_tokens = count_tokens(seed_text)
    seeds = seed_chunks(seed_text)
    path = SeedPath(models["gliner"], models["glirel"], list(schema.entity_types), list(schema.relation_labels),
                    threshold, device=device)
    path.check(seeds[:4], direct_entity_count(models["gliner"], seeds[:4], list(schema.entity_types), threshold))
    path.run_one(seeds[0])
    _sync(device)
    with stopwatch() as t:
        for c in seeds:
            path.run_one(c)
        _sync(device)
    out["seed"] = {"path": path.mode, "note": path.reason, "sample_tokens": seed_tokens, "chunks": len(seeds),
                   "seconds": rnd(t["s"]), "tokens_per_s": rnd(seed_tokens / t["s"], 1)}
    out["speedup_tokens_per_s_batch8"] = ratio(out["ours_by_batch_size"]["8"]["tokens_per_s"], out["seed"]["tokens_per_s"])
    del path
    clear_model_cache()
    gc.collect()
    return out


def embedding(device: str) -> dict[str, Any]:
    from tiny_graphrag.chunking import chunk_documents
    from tiny_graphrag.config import ChunkingConfig
    from tiny_graphrag.documents import document_from_text
    from tiny_graphrag.embed import Embedder

    chunks = [c.text for c in chunk_documents([document_from_text(obama_text(), source="obama")], ChunkingConfig())]
    e = Embedder(device=device)
    e.embed(chunks[:4])
    _sync(device)
    with stopwatch() as tb:
        e.embed(chunks)
        _sync(device)
    with stopwatch() as tp:
        for c in chunks:
            e.embed([c])
        _sync(device)
    return {"chunks": len(chunks), "batched_texts_per_s": rnd(len(chunks) / tb["s"], 1),
            "per_call_texts_per_s": rnd(len(chunks) / tp["s"], 1), "speedup": ratio(tp["s"], tb["s"])}


def llm_offload(prompt_tokens: int, gen_tokens: int) -> dict[str, Any]:
    import llama_cpp

    from tiny_graphrag.config import LLMConfig
    from tiny_graphrag.llm import LlamaCppLLM

    from .common import gemma_path
    from .llm_throughput import raw_throughput

    offload = bool(llama_cpp.llama_supports_gpu_offload())
    out: dict[str, Any] = {"gpu_offload_available": offload}
    layers = (0, -1) if offload else (0,)
    for n in layers:
        llm = LlamaCppLLM(LLMConfig(model=str(gemma_path()), chat_format="gemma", n_ctx=4096, n_gpu_layers=n))
        out["gpu_layers_all" if n == -1 else "cpu_only"] = raw_throughput(llm, prompt_tokens, gen_tokens)
        del llm
    if offload:
        out["prompt_speedup"] = ratio(out["gpu_layers_all"]["prompt_tokens_per_s"], out["cpu_only"]["prompt_tokens_per_s"])
        out["generation_speedup"] = ratio(out["gpu_layers_all"]["generation_tokens_per_s"] or 0,
                                          out["cpu_only"]["generation_tokens_per_s"] or 1)
    else:
        out["note"] = ("this llama-cpp-python has no GPU offload: rebuild it with "
                       "CMAKE_ARGS=\"-DGGML_CUDA=on\" pip install --force-reinstall --no-cache-dir llama-cpp-python")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--words", type=int, default=None, help="extraction sample (default: 5000 on CUDA, 300 on CPU)")
    ap.add_argument("--seed-words", type=int, default=None, help="seed-path sample (default: 1500 on CUDA, 150 on CPU)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "gpu.json")
    ap.add_argument("--skip", nargs="*", default=[], choices=["extraction", "embedding", "llm"])
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    quiet_logs()
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    gpu = device.startswith("cuda")
    words = args.words or (5000 if gpu else 300)
    seed_words = args.seed_words or (1500 if gpu else 150)
    result: dict[str, Any] = {"command": "python -m bench.gpu " + " ".join(argv if argv is not None else sys.argv[1:]),
                              "device": device, "machine": machine_info(), "git": git_commit(),
                              "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    steps = [("extraction", lambda: extraction(device, words, args.out.parent / "models", seed_words)),
             ("embedding", lambda: embedding(device)),
             ("llm", lambda: llm_offload(2048 if gpu else 512, 128 if gpu else 32))]
    failed = False
    for name, fn in steps:
        if name in args.skip:
            continue
        try:
            with stopwatch() as t:
                result[name] = fn()
            result[name]["section_seconds"] = rnd(t["s"], 1)
        except Exception as exc:  # noqa: BLE001 - record, continue
            failed = True
            result[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"== {name} ({device}) ==\n{json.dumps(result[name], indent=2)}", flush=True)
        dump_json(result, args.out)
    print(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
