"""Chunking: offsets reproduce the text, overlap, sentences kept whole, token bounds, stable ids."""

from pathlib import Path

import pytest

from tiny_graphrag.config import ChunkingConfig
from tiny_graphrag.indexing.chunking import WORD_RE, chunk_document, count_tokens, split_sentences
from tiny_graphrag.indexing.documents import document_from_text, read_document

CORPORA = Path(__file__).resolve().parents[1] / "examples" / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "corpora"


def _doc(text):
    return document_from_text(text, source="<test>")


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "The U.S. economy grew 3.5 percent in 2010. It slowed later.",
            ["The U.S. economy grew 3.5 percent in 2010.", "It slowed later."],
        ),
        ("Did it work? Yes! Mr. Smith went to Washington.", ["Did it work?", "Yes!", "Mr. Smith went to Washington."]),
        ("# Heading\n\nFirst paragraph here.\n\nSecond one", ["# Heading", "First paragraph here.", "Second one"]),
        ("Line one.\r\n\r\nLine two.", ["Line one.", "Line two."]),
    ],
)
def test_sentences(text, expected):
    assert [text[s:e] for s, e in split_sentences(text)] == expected


def _corpus_docs():
    docs = [read_document(CORPORA / "barack_obama.txt")]
    carol = SHARED / "a_christmas_carol.txt"  # UTF-8 with BOM and CRLF
    if carol.exists():
        docs.append(read_document(carol))
    return docs


@pytest.mark.parametrize("max_tokens, overlap", [(256, 32), (64, 16), (32, 0), (400, 100)])
def test_chunk_properties_on_real_text(max_tokens, overlap):
    for doc in _corpus_docs():
        cfg = ChunkingConfig(max_tokens=max_tokens, overlap_tokens=overlap)
        chunks = chunk_document(doc, cfg)
        assert chunks, doc.source
        sentence_ends = {e for _, e in split_sentences(doc.text)}
        for prev, c in zip([None] + chunks[:-1], chunks):
            assert doc.text[c.start : c.end] == c.text  # offsets reproduce the text
            assert c.n_tokens == count_tokens(c.text) <= max_tokens
            assert c.doc_id == doc.id
            if prev is not None:
                assert c.start > prev.start  # always moves forward
                assert not doc.text[prev.end : c.start].strip()  # contiguous: only whitespace between
                if overlap:
                    # the overlap never exceeds its budget
                    assert count_tokens(doc.text[c.start : max(c.start, prev.end)]) <= overlap
        # every word of the document is in some chunk
        words = [m.start() for m in WORD_RE.finditer(doc.text)]
        starts = sorted((c.start, c.end) for c in chunks)
        j = 0
        for w in words:
            while j < len(starts) and starts[j][1] <= w:
                j += 1
            assert j < len(starts) and starts[j][0] <= w, f"word at {w} not covered"
        # a chunk ends inside a sentence only when that sentence alone exceeds the budget
        sentences = split_sentences(doc.text)
        for c in chunks:
            if c.end not in sentence_ends:
                ((s, e),) = [(s, e) for s, e in sentences if s < c.end < e]
                assert count_tokens(doc.text[s:e]) > max_tokens


def test_overlap_repeats_whole_sentences():
    text = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunks = chunk_document(_doc(text), ChunkingConfig(max_tokens=30, overlap_tokens=12))
    for a, b in zip(chunks, chunks[1:]):
        assert b.start < a.end  # overlapping
        assert text[b.start : a.end].startswith("Sentence number")


def test_long_sentence_is_cut_only_at_token_boundaries():
    text = "word " * 100 + "end."
    chunks = chunk_document(_doc(text), ChunkingConfig(max_tokens=16, overlap_tokens=0))
    assert all(c.n_tokens <= 16 for c in chunks)
    assert "".join(c.text.replace(" ", "") for c in chunks) == text.replace(" ", "")


def test_ids_are_stable_and_distinct():
    doc = read_document(CORPORA / "barack_obama.txt")
    a = chunk_document(doc)
    b = chunk_document(doc)
    assert [c.id for c in a] == [c.id for c in b]
    assert len({c.id for c in a}) == len(a)


def test_config_validation():
    with pytest.raises(ValueError):
        ChunkingConfig(max_tokens=64, overlap_tokens=64)
    with pytest.raises(ValueError):
        ChunkingConfig(max_tokens=2)
