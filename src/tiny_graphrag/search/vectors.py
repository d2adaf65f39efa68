"""An in-memory matrix of L2-normalized vectors with top-k cosine search (torch on a GPU when present)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence

import numpy as np

log = logging.getLogger(__name__)


class VectorIndex:
    """Rows of `matrix` are unit vectors named by `ids`; search returns the nearest ids, best first.

    On CUDA (or MPS) the matrix is moved to the device once and the product runs there; on the CPU numpy's BLAS is as
    fast as torch for a matrix-vector product and needs no copy."""

    def __init__(self, ids: Sequence[str], matrix: np.ndarray, *, device: str | None = "cpu"):
        matrix = np.asarray(matrix, dtype=np.float32)
        if matrix.ndim != 2 and len(ids):
            raise ValueError(f"vectors must be a 2-d matrix, got shape {matrix.shape}")
        if len(ids) != len(matrix):
            raise ValueError(f"{len(ids)} ids for {len(matrix)} vectors")
        self.ids, self.matrix = list(ids), matrix
        self._row: dict[str, int] | None = None
        self.device = device or "cpu"
        self._tensor = None
        if self.device != "cpu" and len(self.ids):
            import torch

            self._tensor = torch.from_numpy(matrix).to(self.device)
            log.debug("vector index of %d rows on %s", len(self.ids), self.device)

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, ids: Sequence[str]) -> list[int | None]:
        """The row of each id in `matrix` (None for an id without a vector)."""
        if self._row is None:
            self._row = {k: i for i, k in enumerate(self.ids)}
        return [self._row.get(k) for k in ids]

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of every row to `query` (a unit vector), as a numpy array."""
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.matrix.shape[1]:
            raise ValueError(
                f"query vector has {q.shape[0]} dimensions, the index {self.matrix.shape[1]}: was the index "
                "built with another embedding model?"
            )
        if self._tensor is not None:
            import torch

            with torch.no_grad():
                return (self._tensor @ torch.from_numpy(q).to(self.device)).float().cpu().numpy()
        return self.matrix @ q

    def search(self, query: np.ndarray, k: int, allowed: Collection[str] | None = None) -> list[tuple[str, float]]:
        """The k most similar ids (of `allowed` ones) with their cosine similarity, best first (ties by row order)."""
        sims = self.similarities(query)
        if allowed is not None:
            keep = np.fromiter((i in allowed for i in self.ids), bool, len(self.ids))
            sims, k = np.where(keep, sims, -np.inf), min(k, int(keep.sum()))
        n = len(sims)
        if n == 0 or k <= 0:
            return []
        k = min(k, n)
        top = np.argpartition(-sims, k - 1)[:k] if k < n else np.arange(n)
        top = top[np.lexsort((top, -sims[top]))]
        return [(self.ids[i], float(sims[i])) for i in top]


class MemoEmbed:
    """An embedding function that embeds each distinct text once: global search scores every
    finding of the index against each question, and the findings do not change between questions.
    At most `max_texts` are kept, so a long-running server does not grow with every question's
    own texts (a map point a backend wrote in its own words); later ones are embedded each time."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], max_texts: int = 200_000):
        self.embed, self.max_texts = embed, max_texts
        self.memo: dict[str, np.ndarray] = {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        fresh = dict(zip(missing, np.asarray(self.embed(missing), dtype=np.float32))) if missing else {}
        for t, v in fresh.items():
            if len(self.memo) >= self.max_texts:
                break
            self.memo[t] = v
        return np.stack([self.memo[t] if t in self.memo else fresh[t] for t in texts])
