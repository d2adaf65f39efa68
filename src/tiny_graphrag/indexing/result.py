"""What a build returns: the summary of what it made and a handle to the index."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiny_graphrag.index.store import IndexStore

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.search.engine import QueryEngine


@dataclass(frozen=True)
class BuildSummary:
    documents: int
    chunks: int
    entities_per_type: dict[str, int] = field(default_factory=dict)
    relations_per_label: dict[str, int] = field(default_factory=dict)
    merged_aliases: int = 0
    dropped_relations: dict[str, int] = field(default_factory=dict)
    communities_per_level: dict[int, int] = field(default_factory=dict)
    reports: int = 0
    seconds_per_stage: dict[str, float] = field(default_factory=dict)
    # e.g. {"extraction": n, "extraction_cached": n, "llm": n, "llm_cached": n}
    model_calls: dict[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    skipped_files: tuple[str, ...] = ()  # files in the input folders of formats not read
    fallback_reports: int = 0  # reports built from the data because the model's output was unusable
    changes: dict[str, Any] | None = None  # an update of an existing index: what it added and removed (sync.changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def _repr_html_(self) -> str:  # Jupyter: the summary as a table
        from tiny_graphrag.outputs.notebook import summary_html

        return summary_html(self)

    def format(self) -> str:  # for the CLI
        lines = [
            f"documents: {self.documents}",
            f"chunks: {self.chunks}",
            f"entities: {sum(self.entities_per_type.values())}"
            + "".join(f"\n  {t}: {n}" for t, n in sorted(self.entities_per_type.items(), key=lambda x: -x[1])),
            f"relations: {sum(self.relations_per_label.values())}"
            + "".join(f"\n  {t}: {n}" for t, n in sorted(self.relations_per_label.items(), key=lambda x: -x[1])),
            f"merged aliases: {self.merged_aliases}",
            f"relations dropped: {sum(self.dropped_relations.values())}"
            + "".join(f"\n  {k}: {v}" for k, v in sorted(self.dropped_relations.items())),
            "communities per level: "
            + (", ".join(f"C{lvl}={n}" for lvl, n in sorted(self.communities_per_level.items())) or "none"),
            f"reports: {self.reports}"
            + (
                f" ({self.fallback_reports} fallback: the model's output was unusable)" if self.fallback_reports else ""
            ),
            "model calls: " + ", ".join(f"{k}={v}" for k, v in self.model_calls.items()),
            "seconds per stage: " + ", ".join(f"{k}={v:.1f}" for k, v in self.seconds_per_stage.items()),
        ]
        if self.changes:
            lines.append(
                "changes: "
                + ", ".join(
                    f"{k} +{v['added']}/-{v['removed']}" if isinstance(v, dict) else f"{k}={v}"
                    for k, v in self.changes.items()
                )
            )
        lines += [f"warning: {w}" for w in self.warnings]  # skipped files: one line, by extension
        return "\n".join(lines)


@dataclass(frozen=True)
class BuildResult:
    """A handle to a built index: its path, its summary, and `open()` for the store."""

    path: Path
    summary: BuildSummary

    def open(self) -> IndexStore:
        return IndexStore.open(self.path)

    def _repr_html_(self) -> str:
        return self.summary._repr_html_()

    def query_engine(self, **kwargs: Any) -> QueryEngine:
        """A QueryEngine over this index (keyword arguments as QueryEngine's)."""
        from tiny_graphrag.search.engine import QueryEngine  # search imports the build's records: not at the top

        return QueryEngine(self.path, **kwargs)
