"""The typed records that flow between pipeline stages.

Every stage takes records and returns records. Offsets are character offsets, end exclusive."""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from _typeshed import SupportsRichComparison

K = TypeVar("K", bound="SupportsRichComparison")


def content_id(prefix: str, *parts: object) -> str:
    """A stable id from content: the same input always gives the same id."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return f"{prefix}-{digest[:16]}"


SHORT_ID_SPACE = 10**7  # ~1% of a 100k-element graph collides, and only collisions depend on the others


def short_ids(keys: Iterable[K], taken: Iterable[int] = ()) -> dict[K, int]:
    """Small stable numbers (citation ids) from content: each key's hash, mod SHORT_ID_SPACE.

    A number depends only on its key, so adding or removing other elements leaves it unchanged and an unchanged
    community's report prompt stays the same (a cache hit). Collisions are resolved by probing in sorted key order, so
    the result is a function of the set of keys alone (an updated index equals a fresh build of the same documents)."""
    used = set(taken)
    out: dict[K, int] = {}
    for key in sorted(set(keys)):
        n = int(hashlib.sha256(str(key).encode("utf-8")).hexdigest()[:15], 16) % SHORT_ID_SPACE
        while n in used:
            n = (n + 1) % SHORT_ID_SPACE
        used.add(n)
        out[key] = n
    return out


@dataclass(frozen=True)
class Document:
    """A decoded input document. `text` is exactly what offsets refer to."""

    id: str
    text: str
    source: str  # file path, or "<text:N>" for raw strings
    # Where each part of the original begins: ("p. 12", offset) for PDF pages, ("row 418", 0) for a
    # table row, ("message 3", 0) for an mbox message; empty for plain text (and old indexes).
    units: tuple[tuple[str, int], ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)  # author, date, a row's other columns
    file_sha256: str = ""  # of the file a document format was read from: an unchanged file is not read again

    def unit_at(self, start: int, end: int | None = None) -> tuple[str, int] | None:
        """The unit label holding `start` ("p. 11", or "p. 11 to p. 12" when `end` lies in a later
        unit) and the unit's start offset; None for a document without units."""
        if not self.units:
            return None
        starts = [s for _, s in self.units]
        first = max(bisect_right(starts, start) - 1, 0)
        last = max(bisect_right(starts, max(start, (end or start) - 1)) - 1, first)
        label = self.units[first][0] + (f" to {self.units[last][0]}" if last > first else "")
        return label, self.units[first][1]


def new_document(
    text: str,
    source: str,
    *,
    units: Sequence[tuple[str, int]] = (),
    metadata: Mapping[str, str] | None = None,
    file_sha256: str = "",
) -> Document:
    """A document with its content id: the text alone for plain text (as ever), else with its units
    and metadata, so two table rows of the same text but other columns stay two documents."""
    units, meta = tuple((str(label), int(at)) for label, at in units), dict(metadata or {})
    extra = (json.dumps([units, meta], sort_keys=True, ensure_ascii=False),) if units or meta else ()
    return Document(content_id("doc", text, *extra), text, source, units, meta, file_sha256)


@dataclass(frozen=True)
class Chunk:
    """A sentence-aligned window of a document; `document.text[start:end] == text`."""

    id: str
    doc_id: str
    index: int  # position within the document
    text: str
    start: int
    end: int
    n_tokens: int


@dataclass(frozen=True)
class EntityMention:
    """An entity found in a chunk; offsets are into `Chunk.text`."""

    text: str
    type: str
    start: int
    end: int
    score: float


@dataclass(frozen=True)
class RelationMention:
    """A directed, labelled relation between two entity mentions of the same chunk."""

    head: EntityMention
    tail: EntityMention
    label: str
    score: float


@dataclass(frozen=True)
class Extraction:
    """Everything an extractor found in one chunk."""

    chunk_id: str
    entities: tuple[EntityMention, ...] = ()
    relations: tuple[RelationMention, ...] = ()


@dataclass(frozen=True)
class Merge:
    """One alias merge done by entity resolution: `alias` was folded into `canonical`."""

    alias: str  # node key that disappeared
    canonical: str  # node key that absorbed it
    type: str
    reason: str  # e.g. "token-subset", "title-stripped", "embedding"
    score: float


@dataclass(frozen=True)
class Community:
    """A community at one level of the hierarchy (level 0 = root level, fewest communities)."""

    id: str
    level: int
    nodes: tuple[str, ...]
    parent: str | None = None
    children: tuple[str, ...] = ()
    edges: tuple[tuple[str, str, str], ...] = ()  # (head key, tail key, edge key) inside it


@dataclass(frozen=True)
class Finding:
    summary: str
    explanation: str


@dataclass(frozen=True)
class Report:
    """A community report in the shape of the GraphRAG paper."""

    community_id: str
    level: int
    title: str
    summary: str
    rating: float
    rating_explanation: str
    findings: tuple[Finding, ...] = ()
    # True when the model's output was unusable and the report lists the members instead;
    # a default, so indexes stored before this field load unchanged.
    fallback: bool = False

    def text(self) -> str:
        """The report as plain text, as it is embedded and shown to the model.

        A string whose words another of its strings already holds is left out: a small model writes a finding's summary
        as the first words of its explanation (cut with "…" at its bound), and the map model copied such fragments as
        its points ("Obama's economic stimulus package ended…") instead of the sentence they begin."""
        pieces = [self.summary] + [s for f in self.findings for s in (f.summary, f.explanation)]
        shown = [not _repeats(i, pieces) for i in range(len(pieces))]
        lines = [f"# {self.title}", ""] + ([self.summary, ""] if shown[0] else [])
        for n, f in enumerate(self.findings):
            head, body = shown[1 + 2 * n], shown[2 + 2 * n]
            if head:
                lines.append(f"## {f.summary}\n")
            if body:
                lines.append(f"{f.explanation}\n")
        return "\n".join(lines).strip()


def _words(text: str) -> str:
    """A string's words, lowercased, without the "…" of a cut string or trailing punctuation."""
    return " ".join(re.findall(r"\w+", text.lower()))


def _repeats(i: int, pieces: list[str]) -> bool:
    """True when piece i is empty, equal to a later piece, or a run of three or more words
    inside a longer one (a one- or two-word heading such as "Stimulus" is a label, kept)."""
    mine = _words(pieces[i])
    if not mine:
        return True
    for j, other in enumerate(pieces):
        theirs = _words(other)
        if j == i or f" {mine} " not in f" {theirs} ":
            continue
        if (mine == theirs and j > i) or (len(theirs) > len(mine) and mine.count(" ") >= 2):
            return True
    return False


@dataclass(frozen=True)
class TreeNode:
    """A RAPTOR summary node (layer >= 1); the tree's leaves are the index's chunks (layer 0)."""

    id: str  # "L<layer>.<n>"
    layer: int
    children: tuple[str, ...]  # node or chunk ids one step down
    chunks: tuple[str, ...]  # every chunk it covers, in index order
    text: str  # the summary
    tokens: int  # its length in the LLM's tokens
    fallback: bool = False  # True when the model gave no usable summary and the text is extracted
