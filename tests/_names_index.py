"""A small real index whose names stress every export format: quotes, commas, markup, line breaks,
Chinese (an excerpt of ../shared/data/corpora/zhuyuanzhang_zh.txt, CC BY-SA, see its README).

Only the extractor is a stand-in (it finds listed names); chunking, graph, communities, the
store and the real all-MiniLM-L6-v2 embeddings are the library's own code paths.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from _fakes import FakeLLM

from tiny_graphrag import build_index
from tiny_graphrag.config import BuildConfig, ChunkingConfig
from tiny_graphrag.records import Chunk, EntityMention, Extraction, RelationMention

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "corpora" / "zhuyuanzhang_zh.txt"
ENGLISH = (
    'Dwayne "The Rock" Johnson met Smith, Jones & Co. at O\'Hare. Later Dwayne "The Rock" Johnson '
    "flew from O'Hare to New\nYork for Acme <Labs>. Smith, Jones & Co. hired Acme <Labs> in New\nYork. "
    "O’Hare is busy. "
)
NAMES = {
    'Dwayne "The Rock" Johnson': "Person",
    "Smith, Jones & Co.": "Organization",
    "O'Hare": "Location",
    "O’Hare": "Location",
    "New York": "Location",
    "Acme <Labs>": "Organization",
    "朱元璋": "Person",
    "朱重八": "Person",
    "朱国瑞": "Person",
    "朱五四": "Person",
    "陈氏": "Person",
}
SCHEMA = {"entity_types": ["Person", "Organization", "Location"], "relation_types": ["related to"]}


class NameListExtractor:
    """Finds the listed names (a space in a name also matches a line break) and relates neighbours."""

    name = "name-list"

    def describe(self) -> dict:
        return {"name": self.name}

    def extract(self, chunks: Sequence[Chunk], *, progress: bool = False) -> list[Extraction]:
        names = sorted(NAMES, key=len, reverse=True)  # the longest first: "New York" before "York"
        pattern = re.compile("|".join(re.escape(n).replace(r"\ ", r"\s+") for n in names))
        out = []
        for chunk in chunks:
            ents = [
                EntityMention(m.group(), NAMES[" ".join(m.group().split())], m.start(), m.end(), 0.9)
                for m in pattern.finditer(chunk.text)
            ]
            rels = tuple(RelationMention(a, b, "related to", 0.8) for a, b in zip(ents, ents[1:]) if a.text != b.text)
            out.append(Extraction(chunk.id, tuple(ents), rels))
        return out


def chinese_excerpt() -> str:
    if not CORPUS.is_file():
        pytest.fail(f"{CORPUS} is missing: the tests read shared/data beside the repository")
    return CORPUS.read_text(encoding="utf-8")[:400]


def build_names_index(out: Path, texts: list[str] | None = None):
    from tiny_graphrag.backends.embed import Embedder

    return build_index(
        texts if texts is not None else [ENGLISH * 2, chinese_excerpt()],
        out,
        schema=SCHEMA,
        config=BuildConfig(chunking=ChunkingConfig(max_tokens=40, overlap_tokens=0)),
        extractor=NameListExtractor(),
        embedder=Embedder(),
        llm=FakeLLM(),
        progress=False,
    )
