"""Text embedders: the protocol indexing and search use, and the local sentence-transformers one."""

from __future__ import annotations

import base64
import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Protocol

import numpy as np

from tiny_graphrag.backends.files import choose_device, file_fingerprint, load_error, resolve_model
from tiny_graphrag.backends.loaded import cached_model
from tiny_graphrag.errors import ModelLoadError, require
from tiny_graphrag.index.cache import CallCache, cache_key

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer


def document_title(source: str) -> str:
    """A title from a document's file name ("barack_obama.txt" -> "barack obama"); "" for a
    raw string or a name without letters (numbered files say nothing about their content)."""
    if not source or source.startswith("<"):
        return ""
    stem = re.sub(r"[_\-]+", " ", PurePath(source).stem).strip()
    return stem if any(ch.isalpha() for ch in stem) else ""


def titled(text: str, title: str) -> str:
    """What is embedded for a chunk: its document's title first (a later chunk of a document
    does not name what the document is about), unless the chunk already starts with it."""
    if not title or text[: len(title) + 2].lower().lstrip().startswith(title.lower()):
        return text
    return f"{title}\n{text}"


class TextEmbedder(Protocol):
    """Turns texts into L2-normalized float32 rows of width `dim`: (len(texts), dim), (0, dim) for no texts.
    `fingerprint` identifies the model's files (it goes into cache keys and the index manifest); `describe()` gives
    JSON-serialisable facts identifying the embeddings (name, path, fingerprint)."""

    name: str

    @property
    def fingerprint(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray: ...

    def describe(self) -> dict[str, str]: ...


class Embedder:
    """Embeds texts with a local sentence-transformers model, loaded once per process."""

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        *,
        models_dir: str | os.PathLike[str] | None = None,
        device: str | None = None,
        batch_size: int = 64,
        whole_text: bool = True,
    ):
        self.path: Path = resolve_model(model, kind="embedder", models_dir_=models_dir)
        self.name = model
        self.batch_size = batch_size
        # A text longer than the model reads (256 word pieces for all-MiniLM-L6-v2; our 256-word chunks run ~260) is
        # embedded as the length-weighted mean of its windows, so its tail counts; False: the model's own truncation.
        self.whole_text = whole_text
        self._device = device

    @functools.cached_property
    def fingerprint(self) -> str:
        """The model files' fingerprint; "+trunc" when long texts are cut (other vectors)."""
        return file_fingerprint(self.path) + ("" if self.whole_text else "+trunc")

    @property
    def model(self) -> SentenceTransformer:
        device = choose_device(self._device)
        return cached_model("embedder", (str(self.path), device), lambda: self._load(device))

    def _load(self, device: str) -> SentenceTransformer:
        st = require("sentence_transformers", "core", "Embedding")
        try:
            return st.SentenceTransformer(str(self.path), device=device, local_files_only=True)
        except Exception as exc:
            raise load_error("embedding", self.path, exc, device=device) from exc

    @property
    def dim(self) -> int:
        # sentence-transformers renamed the method in 5.x; support both
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        dim = get()
        if dim is None:  # sentence-transformers' type allows it; a loaded model always has one
            raise ModelLoadError(f"{self.path} does not say its embedding dimension; use a sentence-transformers model")
        return int(dim)

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        pieces, owner, weight = self._windows(list(texts)) if self.whole_text else (list(texts), None, None)
        vectors = self.model.encode(
            pieces,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        vectors = np.asarray(vectors, dtype=np.float32)
        if owner is None or weight is None or len(pieces) == len(texts):
            return vectors
        out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        np.add.at(out, owner, vectors * weight[:, None])
        return out / np.linalg.norm(out, axis=1, keepdims=True).clip(min=1e-12)

    def _windows(self, texts: list[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Texts cut into windows the model reads whole: (windows, owning text, word pieces)."""
        tok = self.model.tokenizer
        room = max(int(self.model.max_seq_length or tok.model_max_length) - 2, 8)  # [CLS] and [SEP] take two positions
        ids = tok(texts, add_special_tokens=False, verbose=False)["input_ids"]  # no "too long" warning: we cut it
        windows: list[tuple[str, int, int]] = []
        for i, (text, t) in enumerate(zip(texts, ids)):
            if len(t) <= room:
                windows.append((text, i, max(len(t), 1)))
            else:
                parts = [t[start : start + room] for start in range(0, len(t), room)]
                windows += [(tok.decode(part), i, len(part)) for part in parts]
        pieces, owner, weight = zip(*windows)
        return list(pieces), np.asarray(owner), np.asarray(weight, dtype=np.float32)

    __call__ = embed

    def describe(self) -> dict[str, str]:
        return {"name": self.name, "path": str(self.path), "fingerprint": self.fingerprint}


class CachedEmbedder:
    """An embedder behind the call cache, one entry per text: an update embeds only new texts.

    Rows are stored as base64 float32, so a cached row is bit-identical to the one computed. `calls` counts texts
    embedded by the model, `cache_hits` texts answered from the cache."""

    def __init__(self, backend: TextEmbedder, cache: CallCache) -> None:
        self.backend, self.cache = backend, cache
        self.calls = self.cache_hits = 0

    name = property(lambda self: self.backend.name)
    fingerprint = property(lambda self: self.backend.fingerprint)
    dim = property(lambda self: self.backend.dim)

    def describe(self) -> dict[str, str]:
        return self.backend.describe()

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        if not texts:  # the backend knows the width of no rows
            return np.asarray(self.backend.embed([], progress=progress), dtype=np.float32)
        keys = [cache_key("embed", self.fingerprint, t) for t in texts]
        cached = ((i, self.cache.get(key)) for i, key in enumerate(keys))
        rows = {i: np.frombuffer(base64.b64decode(hit), dtype=np.float32) for i, hit in cached if hit is not None}
        todo = [i for i in range(len(texts)) if i not in rows]
        self.cache_hits += len(rows)
        self.calls += len(todo)
        if todo:
            fresh = self.backend.embed([texts[i] for i in todo], progress=progress)
            for i, row in zip(todo, fresh):
                rows[i] = np.asarray(row, dtype=np.float32)
                self.cache.put(keys[i], base64.b64encode(rows[i].tobytes()).decode("ascii"))
        return np.stack([rows[i] for i in range(len(texts))])

    __call__ = embed
