"""RAPTOR's clustering of one tree layer: UMAP, a Gaussian mixture sized by BIC, soft assignment.

After parthsarthi03/raptor (cluster_utils.py): a global UMAP pass (n_neighbors = sqrt(n - 1)) and mixture, then a local
pass (n_neighbors = 10) inside each global cluster; a node joins every cluster whose probability exceeds the threshold;
a cluster whose text would exceed the summary prompt's budget is clustered again. Differences, each for a reason:
- a node always joins its most probable cluster (with many components the best probability can be under the threshold,
  and RAPTOR then silently drops the node);
- layers too small for UMAP are clustered on the raw embeddings;
- identical embeddings are collapsed before UMAP and the mixture (over duplicates both degenerate);
- an over-budget cluster that clustering cannot split is cut in document order, so the recursion always ends.
Everything is seeded: the same embeddings and seed give the same clusters."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from types import ModuleType

import numpy as np

from tiny_graphrag.config import TreeConfig
from tiny_graphrag.errors import require

log = logging.getLogger(__name__)

LOCAL_NEIGHBORS = 10  # RAPTOR's local pass


def require_libraries() -> tuple[ModuleType, ModuleType]:
    umap = require("umap", "tree", "the RAPTOR tree (UMAP)")
    mixture = require("sklearn.mixture", "tree", "the RAPTOR tree (scikit-learn's GaussianMixture)")
    return umap, mixture


def _reduce(x: np.ndarray, n_neighbors: int, dim: int, seed: int) -> np.ndarray:
    """UMAP to `dim` components, or the raw rows when the layer is too small for UMAP."""
    n = len(x)
    if n <= dim + 1 or n_neighbors < 2:
        return x  # a tiny layer (RAPTOR stops there): UMAP's layout needs more points than components
    dim = min(dim, n - 2)
    umap, _ = require_libraries()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "n_jobs overridden by random_state": seeding is the point
        return umap.UMAP(
            n_neighbors=min(n_neighbors, n - 1), n_components=dim, metric="cosine", random_state=seed, n_jobs=1
        ).fit_transform(x)


def _mixture(x: np.ndarray, threshold: float, max_clusters: int, seed: int) -> list[list[int]]:
    """Soft clusters of the rows of `x` (lists of row indices); the count chosen by lowest BIC."""
    distinct, inverse = _distinct(x)
    if len(distinct) < 2:
        return [list(range(len(x)))]
    _, mixture = require_libraries()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings on tiny layers change nothing here
        best = min(
            (
                mixture.GaussianMixture(n_components=k, random_state=seed).fit(distinct)
                for k in range(1, min(max_clusters, len(distinct) - 1) + 1)
            ),
            key=lambda gm: gm.bic(distinct),
        )
        probs = best.predict_proba(distinct)[inverse]
    chosen = probs > threshold
    chosen[np.arange(len(probs)), probs.argmax(axis=1)] = True  # every row joins its most probable cluster
    return [np.flatnonzero(column).tolist() for column in chosen.T if column.any()]


def _distinct(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    distinct, inverse = np.unique(np.round(x, 6), axis=0, return_inverse=True)
    return distinct, np.asarray(inverse).reshape(-1)


def _two_pass(x: np.ndarray, config: TreeConfig) -> list[list[int]]:
    """RAPTOR's global then local clustering (row indices of `x`), on the distinct rows: UMAP
    spreads identical points apart, and copies of one text belong in one cluster."""
    distinct, inverse = _distinct(x)
    if len(distinct) < len(x):  # each cluster of distinct rows, as the rows of x that are copies of them
        return [np.flatnonzero(np.isin(inverse, c)).tolist() for c in _two_pass(distinct, config)]
    n, dim, seed = len(x), config.reduction_dim, config.seed
    out: list[list[int]] = []
    for members in _mixture(_reduce(x, int((n - 1) ** 0.5), dim, seed), config.threshold, config.max_clusters, seed):
        if len(members) <= dim + 1:
            out.append(members)
            continue
        sub = _reduce(x[members], LOCAL_NEIGHBORS, dim, seed)
        out += [[members[i] for i in local] for local in _mixture(sub, config.threshold, config.max_clusters, seed)]
    return out


def _cut(members: Sequence[int], tokens: Sequence[int], budget: int) -> list[list[int]]:
    """Consecutive groups within `budget` tokens (a node alone over it stays alone)."""
    groups: list[list[int]] = [[]]
    used = 0
    for i in sorted(members):
        if groups[-1] and used + tokens[i] > budget:
            groups.append([])
            used = 0
        groups[-1].append(i)
        used += tokens[i]
    return groups


def cluster_layer(
    embeddings: np.ndarray, tokens: Sequence[int], budget: int, config: TreeConfig, _depth: int = 0
) -> list[list[int]]:
    """Clusters of one layer's nodes (row indices, each sorted), every one within `budget` tokens
    of text unless it is a single node. `tokens[i]` is the size of node i's text."""
    x = np.asarray(embeddings, dtype=np.float32)
    if len(x) == 0:
        return []
    if len(x) == 1:
        return [[0]]
    clusters: list[list[int]] = []
    for members in _two_pass(x, config):
        members = sorted(members)
        if len(members) == 1 or sum(tokens[i] for i in members) <= budget:
            clusters.append(members)
        elif len(members) == len(x) or _depth >= 8:
            clusters += _cut(members, tokens, budget)  # clustering cannot split it: cut it in order
        else:
            sub = cluster_layer(x[members], [tokens[i] for i in members], budget, config, _depth + 1)
            clusters += [[members[i] for i in c] for c in sub]
    unique = list(dict.fromkeys(tuple(c) for c in clusters))  # soft assignment can repeat a cluster
    log.debug("layer of %d nodes -> %d clusters", len(x), len(unique))
    return [list(c) for c in unique]
