"""Citations: [Data: Entities (1, 2); Relationships (3); Sources (4); Reports (5)].

One syntax for community reports and search answers, so one parser serves both: parsing, removing ids a reader was never
shown, and stripping citations from text quoted elsewhere."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Protocol


class Citable(Protocol):
    """What the context offered, by citation kind (search.result.Sources is one)."""

    def citable(self) -> dict[str, set[int]]: ...


CitationKind = str  # "entities", "relationships", "sources", "reports"
KINDS = {  # the words a model writes for each kind -> the kind's name in the syntax
    word: name
    for name, words in (
        ("Entities", ("entities", "entity")),
        ("Relationships", ("relationships", "relationship", "relations", "relation")),
        ("Sources", ("sources", "source")),
        ("Reports", ("reports", "report")),
    )
    for word in words
}
DATA_BLOCK = re.compile(r"\s*\[\s*Data\s*:([^\]]*)\]", re.IGNORECASE)
DATA_PART = re.compile(r"([A-Za-z]+)\s*\(([^)]*)\)")


def _cited(block: str) -> Iterator[tuple[str, dict[int, None]]]:
    """(kind name, ids in order without repeats) of each known kind inside one [Data: ...] block."""
    for kind, ids in DATA_PART.findall(block):
        if kind.lower() in KINDS:
            yield KINDS[kind.lower()], dict.fromkeys(int(t) for t in re.findall(r"\d+", ids))


def parse_citations(text: str) -> dict[str, list[int]]:
    """Ids cited as [Data: Entities (1, 2); Relationships (3); Sources (4)], in order, deduplicated."""
    out: dict[str, list[int]] = {"entities": [], "relationships": [], "sources": [], "reports": []}
    for block in DATA_BLOCK.finditer(text):
        for name, ids in _cited(block.group(1)):
            bucket = out[name.lower()]
            bucket += [i for i in ids if i not in bucket]
    return out


def filter_citations(text: str, citable: Mapping[str, set[int]]) -> str:
    """Rewrite each [Data: ...] block to keep only ids in `citable`; drop blocks left empty."""

    def repl(m: re.Match) -> str:
        parts: dict[str, list[int]] = {}
        for name, ids in _cited(m.group(1)):
            keep = parts.setdefault(name, [])
            keep += [i for i in ids if i in citable.get(name.lower(), set()) and i not in keep]
        rendered = "; ".join(f"{k} ({', '.join(map(str, v))})" for k, v in parts.items() if v)
        return f" [Data: {rendered}]" if rendered else ""

    return DATA_BLOCK.sub(repl, text).strip()


def strip_citations(text: str) -> str:
    """The text without its [Data: ...] blocks (a report quoted inside another context)."""
    return DATA_BLOCK.sub("", text).strip()


def unresolved(text: str, sources: Citable) -> dict[str, tuple[int, ...]]:
    """Cited ids that do not resolve through `sources`, by kind (empty when all resolve)."""
    citable = sources.citable()
    out: dict[str, tuple[int, ...]] = {}
    for kind, ids in parse_citations(text).items():
        if bad := tuple(i for i in ids if i not in citable.get(kind, set())):
            out[kind] = bad
    return out


def check_citations(text: str, sources: Citable) -> tuple[str, dict[str, tuple[int, ...]]]:
    """(text with only resolvable citations, the ids that were removed).

    A model may cite an id it was never shown (or copy one out of a report's text): such a citation would point at
    nothing, so it is removed rather than passed on; so is a block without any id, the prompt's "[Data: Reports (ids)]"
    copied as it stands."""
    bad = unresolved(text, sources)
    if not bad and not any(not re.search(r"\d", m.group(1)) for m in DATA_BLOCK.finditer(text)):
        return text, {}
    return filter_citations(text, sources.citable()), bad
