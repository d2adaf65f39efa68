"""The tables global search maps: community reports, or a RAPTOR tree's summaries taken as reports.

`GlobalIndex` numbers the reports (a report's citation id is its row, the same in every search), groups them by level;
`TreeIndex` holds the tree's summaries and vectors for tree search, and `tree_as_reports` turns them into a
`GlobalIndex` whose top layer is level 0."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tiny_graphrag.errors import InputError
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.records import Report, TreeNode
from tiny_graphrag.search.context import pack_report_batches
from tiny_graphrag.search.tokens import TokenCounter
from tiny_graphrag.search.vectors import VectorIndex


class GlobalIndex:
    """The report table of an index: short ids, levels, the hierarchy, vectors for the selection.

    `covers` is set for the RAPTOR tree's summaries taken as reports: the chunk ids each covers,
    so a summary's sources resolve to document text."""

    def __init__(
        self,
        reports: Sequence[Report],
        report_vectors: VectorIndex | None = None,
        covers: dict[str, tuple[str, ...]] | None = None,
        children: dict[str, tuple[str, ...]] | None = None,
    ):
        self.reports, self.covers = list(reports), covers
        # A report's citation id is its row in the index's report table: the same in every search.
        self.id_of: dict[str, int] = {r.community_id: i for i, r in enumerate(self.reports)}
        self.vectors = report_vectors
        # The reports one level down from each report (communities without a report are left out).
        self.child_reports: dict[int, tuple[int, ...]] = {
            self.id_of[cid]: tuple(self.id_of[k] for k in kids if k in self.id_of)
            for cid, kids in (children or {}).items()
            if cid in self.id_of
        }
        self._level_tokens: dict[tuple, int] = {}

    @property
    def levels(self) -> list[int]:
        return sorted({r.level for r in self.reports})

    def at_level(self, level: int) -> list[tuple[int, Report]]:
        return [(self.id_of[r.community_id], r) for r in self.reports if r.level == level]

    def level_tokens(self, chunk_tokens: int, counter: TokenCounter) -> int:
        """The map tokens of the largest level's reports (dynamic selection's `dynamic_share` is of
        these), packed once per engine and setting."""
        key = (chunk_tokens, counter.name)
        if key not in self._level_tokens:
            packed = (pack_report_batches(self.at_level(lv), chunk_tokens, counter, seed=None) for lv in self.levels)
            self._level_tokens[key] = max((sum(b.tokens for b in batches) for batches in packed), default=0)
        return self._level_tokens[key]


def tree_as_reports(nodes: Sequence[TreeNode], vectors: VectorIndex) -> GlobalIndex:
    """The tree's summaries as one report table: the top layer is level 0 (the broadest, like a
    root community), each layer down one level deeper."""
    top = max((n.layer for n in nodes), default=0)
    reports = [
        Report(n.id, top - n.layer, f"summary of {len(n.chunks)} passages (layer {n.layer})", n.text, 0.0, "")
        for n in sorted(nodes, key=lambda n: (-n.layer, n.id))
    ]
    return GlobalIndex(
        reports, vectors, covers={n.id: n.chunks for n in nodes}, children={n.id: n.children for n in nodes}
    )


@dataclass(frozen=True)
class TreeIndex:
    nodes: dict[str, TreeNode]  # the summaries by id
    vectors: VectorIndex  # their embeddings
    roots: tuple[str, ...]  # the top: nodes (summaries or chunks) that are nobody's child

    @classmethod
    def load(cls, store: IndexStore, chunk_ids: Sequence[str], device: str) -> TreeIndex:
        """The index's tree; an InputError naming the build option when it has none."""
        if not store.manifest.get("tree"):
            raise InputError(
                f"the index {store.path} has no RAPTOR tree: it was built without one. Rebuild it with "
                "`tiny-graphrag build FILE... --out DIR --tree` (in Python: BuildConfig(tree=TreeConfig(enabled=True)))"
            )
        nodes = {n.id: n for n in store.tree()}
        ids, matrix = store.vectors("tree")
        children = {c for n in nodes.values() for c in n.children}
        roots = tuple(i for i in [*nodes, *chunk_ids] if i not in children)
        return cls(nodes, VectorIndex(ids, matrix, device=device), roots)
