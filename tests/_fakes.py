"""Deterministic fakes for unit tests of our own pipeline logic (never the only test of a model)."""

from __future__ import annotations

import re
from typing import Sequence

from tiny_graphrag.records import Chunk, EntityMention, Extraction, RelationMention

# A name: capitalized words ("Barack Obama", "Harvard Law School").
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
_TYPES = {"Obama": "Person", "Michelle": "Person", "Harvard": "Organization", "Chicago": "Location",
          "Hawaii": "Location", "Columbia": "Organization", "Honolulu": "Location"}


class KeywordExtractor:
    """Finds capitalized names; types them by a keyword; relates consecutive names in a chunk."""

    name = "keyword-fake"

    def __init__(self, relation: str = "related to", fail_after: int | None = None):
        self.relation = relation
        self.calls = 0
        self.chunks_seen = 0
        self.fail_after = fail_after  # raise KeyboardInterrupt after this many chunks (crash test)

    def describe(self) -> dict:
        return {"name": self.name, "relation": self.relation}

    def extract(self, chunks: Sequence[Chunk], *, progress: bool = False) -> list[Extraction]:
        self.calls += 1
        out = []
        for chunk in chunks:
            if self.fail_after is not None and self.chunks_seen >= self.fail_after:
                raise KeyboardInterrupt
            self.chunks_seen += 1
            ents = []
            for m in _NAME.finditer(chunk.text):
                typ = next((t for k, t in _TYPES.items() if k in m.group()), None)
                if typ:
                    ents.append(EntityMention(m.group(), typ, m.start(), m.end(), 0.9))
            rels = tuple(RelationMention(a, b, self.relation, 0.8) for a, b in zip(ents, ents[1:]))
            out.append(Extraction(chunk.id, tuple(ents), rels))
        return out
