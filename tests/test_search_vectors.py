"""The in-memory vector index: exact top-k cosine, on the CPU and (when present) on CUDA."""

from __future__ import annotations

import numpy as np
import pytest

from tiny_graphrag.search.vectors import VectorIndex


def _unit(rows):
    m = np.asarray(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _devices():
    out = ["cpu"]
    try:
        import torch

        if torch.cuda.is_available():
            out.append("cuda")
    except ImportError:  # pragma: no cover
        pass
    return out


@pytest.mark.parametrize("device", _devices())
def test_top_k_is_exact_and_ordered(device):
    rng = np.random.default_rng(0)
    m = _unit(rng.normal(size=(500, 16)))
    index = VectorIndex([f"r{i}" for i in range(500)], m, device=device)
    q = m[42]
    hits = index.search(q, 5)
    assert hits[0][0] == "r42" and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    expected = np.argsort(-(m @ q))[:5]
    assert [h[0] for h in hits] == [f"r{i}" for i in expected]
    assert all(a[1] >= b[1] for a, b in zip(hits, hits[1:]))
    assert len(index.search(q, 10_000)) == 500


def test_edge_cases():
    empty = VectorIndex([], np.zeros((0, 4), dtype=np.float32))
    assert empty.search(np.ones(4), 3) == []
    index = VectorIndex(["a", "b"], _unit([[1, 0], [0, 1]]))
    assert index.search(np.array([1.0, 0.0]), 0) == []
    with pytest.raises(ValueError, match="dimensions"):
        index.search(np.ones(3), 1)
    with pytest.raises(ValueError):
        VectorIndex(["a"], _unit([[1, 0], [0, 1]]))
