"""Sentence-transformers embedder: local files only, batched, L2-normalized float32 rows."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from .errors import ModelLoadError, require
from .models import choose_device, enable_offline_mode, file_fingerprint, resolve_model

log = logging.getLogger(__name__)

_LOADED: dict[tuple[str, str], object] = {}
_LOCK = threading.Lock()


class Embedder:
    """Embeds texts with a local sentence-transformers model, loaded once per process."""

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        *,
        models_dir: str | None = None,
        device: str | None = None,
        batch_size: int = 64,
    ):
        self.path: Path = resolve_model(model, kind="embedder", models_dir_=models_dir)
        self.name = model
        self.batch_size = batch_size
        self._device = device
        self._fingerprint: str | None = None

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = file_fingerprint(self.path)
        return self._fingerprint

    @property
    def model(self):
        device = choose_device(self._device)
        key = (str(self.path), device)
        with _LOCK:
            if key not in _LOADED:
                enable_offline_mode()
                st = require("sentence_transformers", "core", "Embedding")
                try:
                    _LOADED[key] = st.SentenceTransformer(str(self.path), device=device, local_files_only=True)
                except Exception as exc:
                    raise ModelLoadError(
                        f"embedding model at {self.path} could not be loaded ({exc}); "
                        "re-download it with `tiny-graphrag models download --only all-MiniLM-L6-v2`"
                    ) from exc
                log.info("loaded embedder %s on %s", self.path, device)
            return _LOADED[key]

    @property
    def dim(self) -> int:
        # sentence-transformers renamed the method in 5.x; support both
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        return np.asarray(vectors, dtype=np.float32)

    __call__ = embed

    def describe(self) -> dict:
        return {"name": self.name, "path": str(self.path), "fingerprint": self.fingerprint}
