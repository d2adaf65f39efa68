"""The index directory: manifest checks, keyword index, vectors, atomic publish."""

import json

import numpy as np
import pytest

from tiny_graphrag.config import ChunkingConfig
from tiny_graphrag.errors import IndexFormatError
from tiny_graphrag.index.placement import publish, staging_dir
from tiny_graphrag.index.store import MANIFEST, IndexStore
from tiny_graphrag.indexing.chunking import chunk_documents
from tiny_graphrag.indexing.documents import load_documents
from tiny_graphrag.records import Community, Finding, Report, short_ids

TEXTS = [
    "Barack Obama studied law at Harvard Law School. He taught constitutional law in Chicago.",
    "The Great Recession hit the economy. A stimulus package followed in 2009.",
    "Michelle Obama was born in Chicago. She studied at Princeton University.",
]


def _make(tmp_path, name="idx"):
    docs = load_documents(TEXTS)
    chunks = chunk_documents(docs, ChunkingConfig(max_tokens=64, overlap_tokens=0))
    store = IndexStore.create(tmp_path / name)
    store.add_documents(docs)
    store.add_chunks(chunks)
    store.save_vectors("chunks", [c.id for c in chunks], np.eye(len(chunks), 4, dtype=np.float32))
    com = Community(
        id="com-1",
        level=0,
        nodes=("obama", "harvard"),
        children=("com-2",),
        edges=(("obama", "harvard", "educated at"),),
    )
    store.save_communities([com])
    rep = Report(
        "com-1", 0, "Obama and Harvard", "Summary.", 7.5, "Important.", (Finding("f", "e [Data: Sources (1)]"),)
    )
    store.save_reports([rep])
    store.write_manifest({"library_version": "test"})
    store.close()
    return docs, chunks, com, rep


def test_round_trip(tmp_path):
    docs, chunks, com, rep = _make(tmp_path)
    store = IndexStore.open(tmp_path / "idx")
    assert store.documents() == docs
    assert store.chunks() == chunks
    assert store.chunk(chunks[1].id) == chunks[1]
    sids = store.source_ids()
    # Content-derived since issue 14 (was: 1..N in insertion order): unique, from the chunk ids alone.
    assert sids == short_ids(c.id for c in chunks) and len(set(sids.values())) == len(chunks)
    assert store.chunk_by_sid(sids[chunks[2].id]) == chunks[2]
    assert store.communities() == [com]
    assert store.reports() == [rep] and store.reports(level=1) == []
    ids, mat = store.vectors("chunks")
    assert ids == [c.id for c in chunks] and mat.shape == (len(chunks), 4)


def test_keyword_search_ranks_and_stems(tmp_path):
    _, chunks, _, _ = _make(tmp_path)
    store = IndexStore.open(tmp_path / "idx")
    hits = store.keyword_search("Where did Obama study law?")
    assert hits[0][0] == chunks[0].id  # "studied law" stems to match "study law"
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert store.keyword_search("") == [] and store.keyword_search("?!") == []
    # FTS5 operators and quotes in a query are matched as words, never parsed as syntax
    assert store.keyword_search('"Harvard AND OR NEAR(') and store.keyword_search("NOT") == []


@pytest.mark.parametrize(
    "damage, message",
    [
        ("no_dir", "no index at"),
        ("no_manifest", "did not finish"),
        ("bad_version", "format version"),
        ("corrupt_manifest", "corrupt"),
        ("missing_file", "is missing"),
    ],
)
def test_open_refuses_bad_indexes(tmp_path, damage, message):
    _make(tmp_path)
    path = tmp_path / "idx"
    m = path / MANIFEST
    if damage == "no_dir":
        path = tmp_path / "nope"
    elif damage == "no_manifest":
        m.unlink()
    elif damage == "bad_version":
        data = json.loads(m.read_text())
        data["format_version"] = 999
        m.write_text(json.dumps(data))
    elif damage == "corrupt_manifest":
        m.write_text("{not json")
    elif damage == "missing_file":
        (path / "vectors" / "chunks.npy").unlink()
    with pytest.raises(IndexFormatError, match=message):
        IndexStore.open(path)


def test_publish_replaces_only_when_complete(tmp_path):
    out = tmp_path / "graphs" / "x"
    _make(tmp_path / "graphs", "x")
    tmp = staging_dir(out)
    _make(tmp.parent, tmp.name)
    publish(tmp, out)
    assert not tmp.exists() and (out / MANIFEST).is_file()
    assert [p.name for p in (tmp_path / "graphs").iterdir()] == ["x"]


def test_chunks_by_id_keeps_the_order_asked_and_names_a_missing_id(tmp_path):
    from tiny_graphrag.records import Chunk, Document

    store = IndexStore.create(tmp_path / "idx")
    store.add_documents([Document(id="d", text="a b c", source="x")])
    chunks = [Chunk(f"c{i}", "d", i, f"text {i}", 0, 1, 2) for i in range(1203)]  # more than one query's worth
    store.add_chunks(chunks)
    order = [f"c{i}" for i in (1202, 0, 600, 5, 0)]
    assert [c.id for c in store.chunks_by_id(order)] == order
    assert store.chunks_by_id(order)[0] == store.chunk("c1202")
    with pytest.raises(KeyError, match="c9999"):
        store.chunks_by_id(["c1", "c9999"])
