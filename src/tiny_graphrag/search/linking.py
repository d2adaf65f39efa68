"""Linking a query to graph entities: exact normalized name matches and embedding similarity.

Never substring matching over all nodes (in the seed an empty line matched every node): a query n-gram must *equal* a
node's key or one of its normalized aliases, and stopword-only n-grams never link. Embedding links need a cosine
similarity above a threshold."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tiny_graphrag.index.graph import normalize_name
from tiny_graphrag.search.hybrid import STOPWORDS
from tiny_graphrag.search.vectors import VectorIndex

_TOKEN = re.compile(r"\S+")
MAX_NGRAM = 8


@dataclass(frozen=True)
class LinkedEntity:
    key: str  # graph node key
    score: float  # 1.0 for an exact match, else the cosine similarity
    how: str  # "exact" or "embedding"
    matched: str = ""  # the query words that matched exactly


def _is_linkable(norm: str) -> bool:
    words = norm.split()
    if not words or all(w in STOPWORDS for w in words):
        return False
    return sum(ch.isalnum() for ch in norm) >= 2


class EntityLinker:
    def __init__(self, graph, entity_vectors: VectorIndex | None):
        self.vectors = entity_vectors
        self.by_name: dict[str, str] = {}
        longest = 1
        for key, data in graph.nodes(data=True):
            names = [key, data.get("name", "")] + list(data.get("aliases", ()))
            for name in names:
                norm = normalize_name(str(name))
                if _is_linkable(norm):
                    self.by_name.setdefault(norm, key)  # the node's own key wins over another's alias
                    longest = max(longest, len(norm.split()))
        self.max_ngram = min(longest, MAX_NGRAM)

    def exact(self, query: str) -> list[LinkedEntity]:
        """Nodes whose key or alias equals a normalized n-gram of the query.

        Longest match first, and a matched word is not matched again: "Christopher Nolan" links the director, not also a
        "Nolan" node (measured on hotpotqa100: the nested matches were mostly wrong entities)."""
        tokens = _TOKEN.findall(query)
        used = [False] * len(tokens)
        found: dict[str, LinkedEntity] = {}
        for n in range(min(self.max_ngram, len(tokens)), 0, -1):
            for i in range(len(tokens) - n + 1):
                if any(used[i : i + n]):
                    continue
                phrase = " ".join(tokens[i : i + n])
                norm = normalize_name(phrase)
                if not _is_linkable(norm):
                    continue
                if (key := self.by_name.get(norm)) is not None:
                    used[i : i + n] = [True] * n
                    found.setdefault(key, LinkedEntity(key, 1.0, "exact", phrase))
        return list(found.values())

    def similarity(self, query_vector: np.ndarray, keys: list[str]) -> list[float]:
        """Cosine of the query to each entity's vector (0 for an entity without one)."""
        if self.vectors is None or not keys:
            return [0.0] * len(keys)
        rows = self.vectors.rows(keys)
        sims = self.vectors.matrix[[r for r in rows if r is not None]] @ np.asarray(query_vector, dtype=np.float32)
        it = iter(sims.tolist())
        return [next(it) if r is not None else 0.0 for r in rows]

    def link(
        self, query: str, query_vector: np.ndarray, *, top_k: int = 10, min_similarity: float = 0.45
    ) -> list[LinkedEntity]:
        """Exact matches first, then embedding matches, at most `top_k` in all (exact ones always kept)."""
        out = {e.key: e for e in self.exact(query)}
        for key, sim in self.vectors.search(query_vector, top_k) if self.vectors is not None else []:
            if sim < min_similarity or len(out) >= top_k:  # best first: no later one is closer
                break
            out.setdefault(key, LinkedEntity(key, sim, "embedding"))
        return list(out.values())
