"""Tiny random-weight GLiNER and GLiREL models, built once per test session (offline, ~2 s).

conftest.py loads this module as a plugin (fixtures `tiny_models_dir`, `no_network`); test modules
import `tiny_config` and the model names from it (pyproject sets `pythonpath = ["tests"]`).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tiny_graphrag.config import ExtractionConfig

TINY_GLINER = "tiny-gliner"
TINY_GLIREL = "tiny-glirel"
SEED = 0


@pytest.fixture(scope="session")
def tiny_models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models dir holding `tiny-gliner` and `tiny-glirel` (random weights, seed 0)."""
    from devmodels import build_tiny_gliner, build_tiny_glirel

    base = tmp_path_factory.mktemp("models")
    build_tiny_gliner(base / TINY_GLINER, seed=SEED)
    build_tiny_glirel(base / TINY_GLIREL, seed=SEED)
    return base


def tiny_config(**overrides) -> ExtractionConfig:
    """An ExtractionConfig that uses the tiny models on CPU in fp32."""
    values = dict(
        gliner_model=TINY_GLINER,
        glirel_model=TINY_GLIREL,
        device="cpu",
        half_precision=False,
        batch_size=4,
    )
    values.update(overrides)
    return ExtractionConfig(**values)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any attempt to open a network connection during the test."""

    def refuse(self, address, *args, **kwargs):  # noqa: ANN001
        if isinstance(address, tuple):  # AF_INET/AF_INET6; unix sockets are local
            raise AssertionError(f"test tried to reach the network: {address}")
        return real_connect(self, address, *args, **kwargs)

    real_connect = socket.socket.connect
    monkeypatch.setattr(socket.socket, "connect", refuse)
