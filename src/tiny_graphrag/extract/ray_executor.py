"""Extraction and embedding on a Ray cluster, through Ray Data `map_batches`.

`build_index(..., executor=RayExecutor(...))` sends the chunks missing from the extraction cache to a pool of Ray
actors, each loading the models once and running the very extractor the in-process build would; the driver caches each
result as it streams back, so an interrupted build redoes no finished chunk. Ray Data schedules, batches, applies
back-pressure and retries (a dead actor is restarted and its batch rerun). Graph, communities and reports run in the
driver as before, so a Ray build writes the same index as an in-process one."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from tiny_graphrag.errors import ConfigError, ModelNotFoundError, TinyGraphRAGError, require
from tiny_graphrag.extract.cached import extraction_from_json, extraction_to_json
from tiny_graphrag.records import Chunk, Extraction

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.backends.embed import TextEmbedder
    from tiny_graphrag.extract.base import Extractor


_CHUNK_FIELDS = [f.name for f in dataclasses.fields(Chunk)]


class ClusterError(TinyGraphRAGError, ConnectionError):
    """The Ray cluster cannot be reached or started."""


def _check_models_here(facts: Any) -> None:
    """Fail on a worker that lacks a model folder (a "path" in an extractor's or embedder's
    describe() output), naming the path and the machine."""
    if not isinstance(facts, dict):
        return
    for key, value in facts.items():
        if key != "path" or not isinstance(value, str):
            _check_models_here(value)
        elif not os.path.exists(value):
            raise ModelNotFoundError(
                f"the model folder {value} does not exist on the Ray worker {socket.gethostname()}. To fix: "
                "put the models at the same path on every node (shared storage, or copy them), or point "
                "--models-dir / TINY_GRAPHRAG_MODELS at a folder every node sees"
            )


def _threads(num_cpus: float | None) -> None:
    """One torch thread per CPU the actor reserved: two actors on two cores with torch's default
    (one thread per core each) would oversubscribe the cores and slow both."""
    if num_cpus:
        import torch

        torch.set_num_threads(max(1, int(num_cpus)))


def _rows(batch: dict[str, np.ndarray]) -> list[Chunk]:
    def py(v: Any) -> Any:  # numpy scalars back to the Python types Chunk holds
        return v.item() if isinstance(v, np.generic) else v

    return [Chunk(**{f: py(batch[f][r]) for f in _CHUNK_FIELDS}) for r in range(len(batch["text"]))]


class _ModelActor:
    """A Ray Data callable class: the extractor and/or embedder (pickled from the driver), models loaded once. It
    extracts the chunks of a batch and embeds its `embed_text` column (for chunks, their text with their title): one
    pass over the corpus and one pool of actors (on a GPU, one GPU holds all three models) instead of a second pool for
    the vectors."""

    def __init__(self, extractor: Extractor | None, embedder: TextEmbedder | None, num_cpus: float | None):
        _threads(num_cpus)
        for model in (extractor, embedder):
            if model is not None:
                _check_models_here(model.describe())
        self.extractor, self.embedder = extractor, embedder

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = {"pos": batch["pos"]}
        if self.extractor is not None:  # as JSON in the cache's own format: the driver stores it as is
            out["json"] = np.array([json.dumps(extraction_to_json(x)) for x in self.extractor.extract(_rows(batch))])
        if self.embedder is not None:
            out["vector"] = self.embedder.embed([str(t) for t in batch["embed_text"]])
        return out


class RayEmbedder:
    """A TextEmbedder that embeds long lists on the Ray actors and short ones in process."""

    def __init__(self, embedder: TextEmbedder, executor: RayExecutor):
        self.inner, self.executor = embedder, executor
        self.name = embedder.name

    fingerprint = property(lambda self: self.inner.fingerprint)
    dim = property(lambda self: self.inner.dim)

    def describe(self) -> dict[str, str]:
        return self.inner.describe()

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        known = self.executor.chunk_vectors  # embedded by the extraction actors
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if len(missing) < self.executor.min_embed_texts:  # starting actors costs more than a short list
            if len(missing) == len(texts):
                return self.inner.embed(texts, progress=progress)
            found = self.inner.embed(missing) if missing else np.zeros((0, self.dim), dtype=np.float32)
        else:
            found = self.executor.embed(self.inner, missing)
        rows = dict(zip(missing, found))
        return np.stack([known[t] if t in known else rows[t] for t in texts]).astype(np.float32)

    __call__ = embed


class RayExecutor:
    """Runs extraction (and, through `embedder()`, embedding) as Ray Data map_batches.

    address: a Ray cluster ("host:port", "ray://host:port", "auto"); None uses the running Ray instance of this process,
    or RAY_ADDRESS, or starts a local one. concurrency: actors per stage. num_gpus: GPUs per actor (1 on a GPU cluster:
    each actor gets its own GPU); with 0, each actor reserves num_cpus CPUs (default: the cluster's CPUs shared out
    between them)."""

    def __init__(
        self,
        address: str | None = None,
        *,
        concurrency: int = 1,
        batch_size: int = 8,
        num_gpus: float = 0,
        num_cpus: float | None = None,
        min_embed_texts: int = 512,
    ):
        if concurrency < 1 or batch_size < 1:
            raise ConfigError(f"Ray concurrency and batch_size must be at least 1, got {concurrency} and {batch_size}")
        self.ray = require("ray", "ray", "Running extraction on Ray (--ray)")
        require("ray.data", "ray", "Running extraction on Ray (--ray)")
        self.concurrency, self.batch_size = concurrency, batch_size
        self.num_gpus, self.min_embed_texts = num_gpus, min_embed_texts
        self.chunk_vectors: dict[str, np.ndarray] = {}  # text -> vector, from the extraction actors
        self._embedder: TextEmbedder | None = None
        self._chunk_text: Callable[[Chunk], str] = lambda c: c.text
        if not self.ray.is_initialized():
            self._connect(address)
        if num_cpus is None and not num_gpus:
            total = float(self.ray.cluster_resources().get("CPU", 1))
            num_cpus = max(1.0, total // concurrency)
        self.num_cpus = num_cpus

    def _connect(self, address: str | None) -> None:
        if address and address != "auto":
            _check_reachable(address)
        elif not address and os.environ.get("RAY_ADDRESS", "auto") not in ("", "auto", "local"):
            # ray.init(None) connects to $RAY_ADDRESS and retries for minutes when nothing listens there
            _check_reachable(os.environ["RAY_ADDRESS"], env=True)
        try:
            self.ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ClusterError(
                f"could not connect to the Ray cluster at {address or 'RAY_ADDRESS / a new local instance'}: "
                f"{exc}. To fix: start it (`ray start --head` on the head node) and pass its address "
                "(--ray HOST:6379), or pass --ray without an address for a local instance"
            ) from exc

    def _map(self, models: tuple, rows: list[dict[str, Any]], batch_size: int):
        ds = self.ray.data.from_items(rows, override_num_blocks=max(1, min(len(rows), 4 * self.concurrency)))
        pool = self.ray.data.ActorPoolStrategy(size=self.concurrency)
        return ds.map_batches(
            _ModelActor,
            fn_constructor_args=(*models, self.num_cpus),
            batch_size=batch_size,
            compute=pool,
            num_gpus=self.num_gpus,
            num_cpus=self.num_cpus or None,
            batch_format="numpy",
        ).iter_batches(batch_size=None, batch_format="numpy")

    def extract(self, extractor: Extractor, chunks: Sequence[Chunk]) -> Iterator[tuple[int, Extraction]]:
        """(position in `chunks`, extraction) for every chunk, in the order they finish."""
        if not chunks:
            return
        rows = [dict(dataclasses.asdict(c), pos=i, embed_text=self._chunk_text(c)) for i, c in enumerate(chunks)]
        for batch in self._map((extractor, self._embedder), rows, self.batch_size):
            for r, (pos, data) in enumerate(zip(batch["pos"], batch["json"])):
                if "vector" in batch:
                    self.chunk_vectors[rows[int(pos)]["embed_text"]] = batch["vector"][r]
                yield int(pos), extraction_from_json(chunks[int(pos)].id, json.loads(str(data)))

    def embed(self, embedder: TextEmbedder, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        rows = [{"pos": i, "embed_text": t} for i, t in enumerate(texts)]
        for batch in self._map((None, embedder), rows, 64):
            out[batch["pos"]] = batch["vector"]
        return out

    def embedder(self, embedder: TextEmbedder, chunk_text: Callable[[Chunk], str] | None = None) -> RayEmbedder:
        """`embedder` run through Ray; given before `extract`, the extraction actors embed each
        chunk's `chunk_text` (what the build embeds for it) as they extract it."""
        self._embedder = embedder
        if chunk_text is not None:
            self._chunk_text = chunk_text
        return RayEmbedder(embedder, self)


def _check_reachable(address: str, *, env: bool = False) -> None:
    """Fail within seconds on an address nothing listens on (ray.init would retry for minutes).
    `env`: the address came from the RAY_ADDRESS environment variable (else from --ray)."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port or (10001 if parts.scheme == "ray" else 6379)
    except ValueError as exc:
        raise ClusterError(
            f"{'RAY_ADDRESS=' if env else ''}'{address}' is not a Ray address. To fix: "
            + ("set RAY_ADDRESS to HOST:PORT, or unset it" if env else "pass HOST:PORT, e.g. --ray 10.0.0.5:6379")
        ) from exc
    try:
        socket.create_connection((host, port), timeout=5.0).close()
    except OSError as exc:
        where = f"RAY_ADDRESS={address} (set in the environment)" if env else address
        fix = "pass --ray without an address for a local instance"
        if env:
            fix = "unset RAY_ADDRESS for a local instance, or set it to a running cluster's HOST:PORT"
        raise ClusterError(
            f"the Ray cluster at {where} cannot be reached ({exc}). To fix: check the address and that "
            f"`ray start --head` runs there, or {fix}"
        ) from exc
