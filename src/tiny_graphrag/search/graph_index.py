"""The knowledge graph as matrices for search: weighted adjacency, chunk<->entity links, PPR.

Built once per QueryEngine. Personalized PageRank (HippoRAG; HippoRAG 2 adds the passages as nodes) spreads mass from
the query's linked entities and its best-matching chunks along relations and mentions: an entity mentioned in a top
chunk passes mass to the other chunks that mention it, which is how the second passage of a multi-hop question (about
the "bridge" entity) is reached. Entities mentioned everywhere spread their mass thin."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping

import numpy as np

from tiny_graphrag.index.graph import node_chunks
from tiny_graphrag.search.vectors import VectorIndex

log = logging.getLogger(__name__)


class ChunkMass(Mapping[str, float]):
    """PageRank mass per chunk id (chunks with mass > 0 are the keys), kept as the mass array.

    A walk reaches most chunks of a large index; a dict of 50k entries per query cost more than the walk itself, and the
    search only reads the best few and a handful of lookups."""

    def __init__(self, chunk_ids: list[str], chunk_pos: Mapping[str, int], mass: np.ndarray):
        self._ids, self._pos, self._mass = chunk_ids, chunk_pos, mass
        self._nonzero = np.flatnonzero(mass > 0)

    def __getitem__(self, chunk_id: str) -> float:
        j = self._pos.get(chunk_id)
        if j is None or self._mass[j] <= 0:
            raise KeyError(chunk_id)
        return float(self._mass[j])

    def __iter__(self) -> Iterator[str]:
        return (self._ids[j] for j in self._nonzero)

    def __len__(self) -> int:
        return len(self._nonzero)

    def top(self, k: int) -> list[tuple[str, float]]:
        """The k chunks with the most mass, (id, mass), ordered by mass then id."""
        if k <= 0:
            return []
        best = ((self._ids[j], float(self._mass[j])) for j in top_candidates(self._mass, k))
        return sorted(best, key=lambda kv: (-kv[1], kv[0]))[:k]


def top_candidates(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the positive values among the k largest, plus every value tied with the k-th,
    unordered: sorting only these gives the top k under any tie rule, without sorting them all."""
    positive = np.flatnonzero(values > 0)
    if len(positive) <= k:
        return positive
    kth = np.partition(values[positive], len(positive) - k)[len(positive) - k]
    return positive[values[positive] >= kth]


# All entity pairs are compared for synonym links: 12k entities take ~1.4 s on 2 CPU cores, and
# the time grows with the square, so larger graphs go without them (with a warning).
MAX_SYNONYM_ENTITIES = 50_000


class GraphIndex:
    def __init__(self, graph, entity_vectors: VectorIndex | None = None, *, cooccurrence_relation: str | None = None):
        from scipy import sparse

        self.graph = graph
        self.entity_vectors = entity_vectors  # for synonym links (synonym_links)
        self.keys: list[str] = list(graph.nodes)
        self.pos: dict[str, int] = {k: i for i, k in enumerate(self.keys)}
        n = len(self.keys)

        # Undirected weights summed over labels and directions: a relation links both ways for
        # retrieval, and several relations between two entities make the link stronger.
        # Co-occurrence links (`cooccurrence_relation`, the spaCy extractor's "two names share a
        # sentence") are kept apart, so the walk can weigh them on their own (cooccurrence_weight).
        pair_weight: dict[tuple[int, int], float] = defaultdict(float)
        cooccurrence: dict[tuple[int, int], float] = defaultdict(float)
        for u, v, k, data in graph.edges(keys=True, data=True):
            if u == v:
                continue
            a, b = sorted((self.pos[u], self.pos[v]))
            label = data.get("label", k)  # as the local context reads it
            pairs = (
                cooccurrence if cooccurrence_relation is not None and label == cooccurrence_relation else pair_weight
            )
            pairs[(a, b)] += float(data.get("weight", 1.0) or 1.0)
        self.adjacency = _symmetric(pair_weight, n)
        self.cooccurrence = _symmetric(cooccurrence, n)

        # Which chunks mention which entities (from the nodes' provenance), chunks numbered as first met.
        self.node_chunks = [node_chunks(graph, key) for key in self.keys]
        chunk_of: dict[str, int] = {}
        m_rows: list[int] = []
        m_cols: list[int] = []
        for i, chunks in enumerate(self.node_chunks):
            for c in chunks:
                m_rows.append(chunk_of.setdefault(c, len(chunk_of)))
                m_cols.append(i)
        self.chunk_ids: list[str] = list(chunk_of)
        self.membership = sparse.csr_matrix(
            (np.ones(len(m_rows)), (m_rows, m_cols)), shape=(len(chunk_of), n), dtype=np.float64
        )
        self.chunk_count = np.array([max(len(c), 1) for c in self.node_chunks], dtype=np.float64)
        self._chunk_pos = chunk_of
        self._walks: dict[tuple[float | None, float], tuple] = {}
        self._synonyms: dict[float, object] = {}

        # Citation ids (hids) back to graph elements, to resolve ids quoted inside reports.
        self.node_by_hid = {int(d["hid"]): key for key, d in graph.nodes(data=True) if d.get("hid") is not None}
        self.edge_by_hid: dict[int, tuple[str, str, str]] = {
            int(d["hid"]): (u, v, k) for u, v, k, d in graph.edges(keys=True, data=True) if d.get("hid") is not None
        }
        log.debug(
            "graph index: %d entities, %d relation and %d co-occurrence links, %d chunks",
            n,
            len(pair_weight),
            len(cooccurrence),
            len(chunk_of),
        )

    def entities_in(self, chunk_id: str) -> list[str]:
        """The keys of the entities a chunk mentions."""
        row = self._chunk_pos.get(chunk_id)
        return [] if row is None else [self.keys[i] for i in self.membership[row].indices]

    def __len__(self) -> int:
        return len(self.keys)

    def synonym_links(self, min_similarity: float, block: int = 1024):
        """Entity pairs whose vectors are at least `min_similarity` alike, as a symmetric sparse matrix weighted by the
        cosine (HippoRAG's synonymy edges): "US" and "United States" are two nodes to a name-normalizing graph, and
        without a link between them the walk cannot pass from a passage naming one to a passage naming the other. All
        pairs are compared, in blocks of rows (O(entities^2) once per engine and threshold; none above
        MAX_SYNONYM_ENTITIES)."""
        if min_similarity in self._synonyms:
            return self._synonyms[min_similarity]
        n, ev = len(self.keys), self.entity_vectors
        pairs: dict[tuple[int, int], float] = {}
        if n > MAX_SYNONYM_ENTITIES:
            log.warning(
                "no synonym links: %d entities is more than the %d whose pairs are compared (the cost grows "
                "with the square); LocalConfig(synonym_similarity=None) turns them off",
                n,
                MAX_SYNONYM_ENTITIES,
            )
        elif ev is not None and len(ev) and n:
            vector_row = ev.rows(self.keys)
            have = np.array([i for i, r in enumerate(vector_row) if r is not None], dtype=np.int64)
            m = ev.matrix[[vector_row[i] for i in have]] if len(have) else np.zeros((0, 1), np.float32)
            t0 = time.perf_counter()
            for start in range(0, len(have), block):
                sims = m[start : start + block] @ m.T
                r, c = np.nonzero(sims >= min_similarity)
                keep = start + r < c  # each pair once, no self pairs
                pairs.update(
                    zip(zip(have[start + r[keep]].tolist(), have[c[keep]].tolist()), sims[r[keep], c[keep]].tolist())
                )
            log.debug(
                "synonym links at %.2f: %d pairs among %d entities in %.1fs",
                min_similarity,
                len(pairs),
                len(have),
                time.perf_counter() - t0,
            )
        self._synonyms[min_similarity] = _symmetric(pairs, n)
        return self._synonyms[min_similarity]

    def _walk_matrix(self, synonym_similarity: float | None = None, cooccurrence_weight: float = 1.0):
        """Entities and chunks as one graph: relations between entities (co-occurrence links
        times `cooccurrence_weight`, plus synonym links when `synonym_similarity` is set), and
        "mentions" links between a chunk and each entity it mentions (HippoRAG 2's passage nodes)."""
        key = (synonym_similarity, cooccurrence_weight)
        if key not in self._walks:
            from scipy import sparse

            adjacency = self.adjacency
            if cooccurrence_weight > 0 and self.cooccurrence.nnz:
                adjacency = adjacency + cooccurrence_weight * self.cooccurrence
            if synonym_similarity is not None:
                adjacency = adjacency + self.synonym_links(synonym_similarity)
            m = self.membership  # chunks x entities
            full = sparse.bmat([[adjacency, m.T], [m, None]]).tocsr() if m.shape[0] else adjacency.tocsr()
            strength = np.asarray(full.sum(axis=1)).reshape(-1)
            self._walks[key] = (full.T.tocsr(), strength)
            log.debug("walk graph: %d entities + %d chunks", len(self.keys), m.shape[0])
        return self._walks[key]

    def personalized_pagerank(
        self,
        seeds: Mapping[str, float],
        chunk_seeds: Mapping[str, float] | None = None,
        *,
        damping: float = 0.5,
        synonym_similarity: float | None = None,
        cooccurrence_weight: float = 1.0,
        iterations: int = 100,
        tol: float = 1e-8,
    ) -> tuple[np.ndarray, ChunkMass]:
        """Personalized PageRank over entities and chunks together.

        The walk follows a link (weighted relation, or chunk-mentions-entity) with probability `damping` and jumps back
        to the seeds otherwise (dead ends jump back too). Seeds are entities (`seeds`: key -> weight) and chunks
        (`chunk_seeds`: chunk id -> weight). With `synonym_similarity`, entities that alike are linked too
        (synonym_links); co-occurrence links weigh `cooccurrence_weight` times what they were extracted with. Returns
        (mass per entity, in `keys` order; mass per chunk id, non-zero only)."""
        adj_t, strength = self._walk_matrix(synonym_similarity, cooccurrence_weight)
        n_ent = len(self.keys)
        total = adj_t.shape[0]
        s = np.zeros(total)
        for key, w in seeds.items():
            if key in self.pos and w > 0:
                s[self.pos[key]] += w
        for cid, w in (chunk_seeds or {}).items():
            j = self._chunk_pos.get(cid)
            if j is not None and w > 0:
                s[n_ent + j] += w
        if total == 0 or s.sum() <= 0:
            return np.zeros(n_ent), ChunkMass(self.chunk_ids, self._chunk_pos, np.zeros(len(self.chunk_ids)))
        s /= s.sum()
        inv = np.divide(1.0, strength, out=np.zeros(total), where=strength > 0)
        dangling = strength == 0
        x = s.copy()
        for _ in range(iterations):
            nxt = damping * (adj_t @ (x * inv)) + (damping * x[dangling].sum() + (1 - damping)) * s
            done = np.abs(nxt - x).sum() < tol
            x = nxt
            if done:
                break
        return x[:n_ent], ChunkMass(self.chunk_ids, self._chunk_pos, x[n_ent:])


def _symmetric(pair_weight: Mapping[tuple[int, int], float], n: int):
    """An n x n symmetric sparse matrix from weights of pairs (a, b), a < b."""
    from scipy import sparse

    rows = [a for a, b in pair_weight] + [b for a, b in pair_weight]
    cols = [b for a, b in pair_weight] + [a for a, b in pair_weight]
    vals = list(pair_weight.values()) * 2
    return sparse.csr_matrix((vals, (rows, cols)), shape=(n, n), dtype=np.float64)
