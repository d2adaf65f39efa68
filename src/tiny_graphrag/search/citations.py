"""Citations in answers: [Data: Sources (1, 2); Reports (3)] — parsing, and removing ids not in the context.

The syntax is the one community reports use (reports.py), so one parser serves both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..reports import filter_citations, parse_citations

if TYPE_CHECKING:  # pragma: no cover
    from .result import Sources

__all__ = ["parse_citations", "check_citations", "unresolved"]


def unresolved(text: str, sources: "Sources") -> dict[str, tuple[int, ...]]:
    """Cited ids that do not resolve through `sources`, by kind (empty when all resolve)."""
    citable = sources.citable()
    out: dict[str, tuple[int, ...]] = {}
    for kind, ids in parse_citations(text).items():
        bad = tuple(i for i in ids if i not in citable.get(kind, set()))
        if bad:
            out[kind] = bad
    return out


def check_citations(text: str, sources: "Sources") -> tuple[str, dict[str, tuple[int, ...]]]:
    """(text with only resolvable citations, the ids that were removed).

    A model may cite an id it was never shown (or copy one out of a report's text): such a
    citation would point at nothing, so it is removed rather than passed on.
    """
    bad = unresolved(text, sources)
    if not bad:
        return text, {}
    return filter_citations(text, sources.citable()), bad
