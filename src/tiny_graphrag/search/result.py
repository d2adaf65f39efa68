"""What a search returns: the answer, exactly what the model saw, and every citable source."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import PurePath
from typing import Any, Protocol, TypeVar

from tiny_graphrag.citations import parse_citations


class Cited(Protocol):
    """What every kind of source has: the id a citation names and the text it stands for."""

    @property
    def id(self) -> int: ...

    @property
    def text(self) -> str: ...


C = TypeVar("C", bound=Cited)


@dataclass(frozen=True)
class SourceChunk:
    """A text chunk cited as [Data: Sources (id)]; start/end are offsets into the document's text."""

    id: int  # the chunk's short source id (sid)
    chunk_id: str
    doc_id: str
    start: int
    end: int
    text: str
    source: str = ""  # the document's file path (or "<text:N>" for raw strings)
    unit: str = ""  # the page ("p. 12"), row ("row 418") or message its start lies in; "" for plain text
    unit_start: int = 0  # where that unit begins in the document's text
    metadata: Mapping[str, str] = field(default_factory=dict)  # the document's (author, date, a row's columns)

    @property
    def location(self) -> str:
        """Where to find it: "annual-report.pdf, p. 12, chars 40-310" (characters within the page),
        or "notes.txt chars 120-480" for a document without pages or rows."""
        name = PurePath(self.source).name or self.doc_id
        if self.unit:
            return f"{name}, {self.unit}, chars {self.start - self.unit_start}-{self.end - self.unit_start}"
        return f"{name} chars {self.start}-{self.end}"

    @property
    def about(self) -> str:
        """The document's metadata in a few words: "author: Ann Lee; date: 2021-03-04" ("" without)."""
        items = [f"{k}: {v}" for k, v in self.metadata.items()]
        return "; ".join(items[:5]) + ("; ..." if len(items) > 5 else "")


@dataclass(frozen=True)
class SourceReport:
    """A community report cited as [Data: Reports (id)]; id is its row in this result's table."""

    id: int
    community_id: str
    level: int
    title: str
    rating: float
    text: str

    def label(self, covers: Mapping[int, Sequence[int]] | None = None) -> str:
        """How it reads where it is cited: a community report by title, community and level; a
        RAPTOR summary (`covers`: tree search's details["summaries"]) by the Sources it covers."""
        if covers is not None and self.id in covers:
            return f"tree {self.title}, covering Sources ({', '.join(map(str, covers[self.id]))})"
        return f"{self.title} (community {self.community_id}, level {self.level})"


@dataclass(frozen=True)
class SourceEntity:
    """An entity cited as [Data: Entities (id)]; id is the graph node's hid."""

    id: int
    key: str
    name: str
    type: str
    text: str  # the row shown to the model


@dataclass(frozen=True)
class SourceRelation:
    """A relationship cited as [Data: Relationships (id)]; id is the graph edge's hid."""

    id: int
    head: str
    tail: str
    label: str
    weight: float
    text: str


@dataclass(frozen=True)
class Sources:
    """Everything the context offered, by citation kind; each cited id resolves to text here."""

    chunks: tuple[SourceChunk, ...] = ()
    reports: tuple[SourceReport, ...] = ()
    entities: tuple[SourceEntity, ...] = ()
    relationships: tuple[SourceRelation, ...] = ()

    @property
    def documents(self) -> tuple[str, ...]:
        """Ids of the documents whose chunks are in the context, first seen first."""
        return tuple(dict.fromkeys(c.doc_id for c in self.chunks))

    def _by_kind(self) -> dict[str, tuple[Cited, ...]]:
        # a citation's kind ("Sources") names the chunks; every other kind is the field's name
        return {"sources" if f.name == "chunks" else f.name: getattr(self, f.name) for f in fields(self)}

    def citable(self) -> dict[str, set[int]]:
        return {kind: {item.id for item in items} for kind, items in self._by_kind().items()}

    def resolve(self, kind: str, ident: int) -> str | None:
        """The text behind a cited id ("sources", "reports", "entities", "relationships"), or None."""
        return next((item.text for item in self._by_kind().get(kind.lower(), ()) if item.id == ident), None)

    def merged(self, other: Sources) -> Sources:
        """The union of two source sets (first occurrence of an id wins)."""

        def union(a: tuple[C, ...], b: tuple[C, ...]) -> tuple[C, ...]:
            new: dict[int, C] = {}
            for x in b:
                new.setdefault(x.id, x)
            seen = {x.id for x in a}
            return tuple(a) + tuple(x for i, x in new.items() if i not in seen)

        return Sources(*(union(getattr(self, f.name), getattr(other, f.name)) for f in fields(self)))


@dataclass(frozen=True)
class Usage:
    """The model calls of one category of a search ("answer", "map", "reduce"), counted apart as
    microsoft/graphrag's structured_search does, so a mode's cost shows where it goes."""

    llm_calls: int = 0  # real model calls (cache hits not included)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0  # calls answered from the call cache


def _total(name: str) -> property:
    # Totals are sums over `usage`, never stored apart, so they cannot disagree with it.
    return property(lambda self: sum(getattr(u, name) for u in self.usage.values()), doc=f"{name} of all categories")


@dataclass(frozen=True)
class SearchResult:
    """One search. `str(result)` is the answer; `context` is exactly the data the model saw."""

    mode: str  # "local", "global", "naive" or "tree"
    query: str
    answer: str
    context: str
    sources: Sources
    context_tokens: int = 0  # tokens of `context`, counted by `token_counter`
    token_counter: str = ""
    seconds: Mapping[str, float] = field(default_factory=dict)  # per step, e.g. {"link": .., "context": ..}
    notes: tuple[str, ...] = ()  # things the user should know (no entity linked, approximate tokens...)
    details: Mapping[str, Any] = field(default_factory=dict)  # mode-specific: linked entities, level, points
    invalid_citations: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # removed from the answer
    # Model calls per category: "answer" (local, naive) or "map" and "reduce" (global); a call
    # that was not made (only_context, nothing relevant) has no entry.
    usage: Mapping[str, Usage] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.answer

    # The totals over every category. llm_calls: real model calls; cache_hits: calls answered from the cache.
    llm_calls = _total("llm_calls")
    prompt_tokens = _total("prompt_tokens")
    completion_tokens = _total("completion_tokens")
    cache_hits = _total("cache_hits")

    @property
    def only_context(self) -> bool:
        return bool(self.details.get("only_context", False))

    def _repr_html_(self) -> str:  # Jupyter: the answer with linked citations, the context folded
        from tiny_graphrag.outputs.notebook import search_result_html

        return search_result_html(self)

    def citations(self) -> dict[str, list[int]]:
        """Ids cited in the answer, by kind."""
        return parse_citations(self.answer)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for `--json`)."""
        d = asdict(self)
        d["seconds"] = dict(self.seconds)
        d["details"] = dict(self.details)
        d["invalid_citations"] = {k: list(v) for k, v in self.invalid_citations.items()}
        d["documents"] = list(self.sources.documents)
        for c, out in zip(self.sources.chunks, d["sources"]["chunks"]):
            out["location"] = c.location
        d.update((f.name, getattr(self, f.name)) for f in fields(Usage))
        return d


class StreamingResult:
    """A search whose answer is still being generated.

    `context` and `sources` are there at once. Iterating yields the answer's text pieces as the model writes them (raw:
    citations are checked only once the answer is complete); after the last piece `result` holds the finished, frozen
    SearchResult. Reading `answer` (or `str()`) consumes the rest of the stream first."""

    def __init__(self, pending: SearchResult, pieces: Iterator[str], finish: Callable[[str, float], SearchResult]):
        self._pending, self._pieces, self._finish = pending, pieces, finish
        self._parts: list[str] = []
        self._result: SearchResult | None = None
        self._started: float | None = None

    def __iter__(self) -> Iterator[str]:
        if self._result is not None:
            return
        if self._started is None:
            self._started = time.perf_counter()
        for piece in self._pieces:
            self._parts.append(piece)
            yield piece
        if self._result is None:
            self._result = self._finish("".join(self._parts), time.perf_counter() - self._started)

    @property
    def done(self) -> bool:
        return self._result is not None

    def close(self) -> None:
        """Stop generating (the reader went away): the model is free for the next call at once,
        and this result has no finished answer."""
        getattr(self._pieces, "close", lambda: None)()

    @property
    def result(self) -> SearchResult:
        """The finished result, consuming whatever is left of the stream."""
        if self._result is None:
            for _ in self:
                pass
        assert self._result is not None
        return self._result

    @property
    def answer(self) -> str:
        return self.result.answer

    @property
    def partial_answer(self) -> str:
        """The text streamed so far."""
        return "".join(self._parts)

    def __str__(self) -> str:
        return self.answer

    def __getattr__(self, name: str) -> Any:
        # context, sources, details... are known before the answer: no need to consume the stream.
        if name.startswith("_"):
            raise AttributeError(name)
        source = self._result if self._result is not None else self._pending
        return getattr(source, name)
