"""Sentence-aware, token-bounded chunking with overlap and exact character offsets.

Tokens are words as GLiNER and GLiREL count them (`\\w+(?:[-_]\\w+)*|\\S`), so a chunk's token count is what the
extraction models see. Sentences come from spaCy's rule-based sentencizer on a blank English pipeline (its tokenizer
keeps "U.S." and "3.14" whole; "?" and "!" end sentences), after splitting paragraphs on blank lines (headings and list
items end there)."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

from tiny_graphrag.backends.loaded import cached_model
from tiny_graphrag.config import ChunkingConfig
from tiny_graphrag.records import Chunk, Document, content_id

WORD_RE = re.compile(r"\w+(?:[-_]\w+)*|\S")
_PARAGRAPH_RE = re.compile(r"\n[ \t\r\f\v]*\n")


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    n_tokens: int


def count_tokens(text: str) -> int:
    return sum(1 for _ in WORD_RE.finditer(text))


def _blank_sentencizer():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, whitespace trimmed; offsets into `text`."""
    nlp = cached_model("spacy", "blank:en+sentencizer", _blank_sentencizer)
    spans: list[tuple[int, int]] = []
    pos = 0
    breaks = [(m.start(), m.end()) for m in _PARAGRAPH_RE.finditer(text)] + [(len(text), len(text))]
    for para_end, next_start in breaks:
        para = text[pos:para_end]
        if para.strip():
            nlp.max_length = max(nlp.max_length, len(para) + 1)
            for sent in nlp(para).sents:
                # Trimmed, so that offsets point at text.
                s = pos + sent.start_char + len(sent.text) - len(sent.text.lstrip())
                e = pos + sent.end_char - (len(sent.text) - len(sent.text.rstrip()))
                if e > s:
                    spans.append((s, e))
        pos = next_start
    return spans


def _split_long(text: str, start: int, end: int, max_tokens: int) -> list[_Span]:
    """Cut an over-long sentence at token boundaries: the only place a sentence is cut."""
    tokens = [(m.start() + start, m.end() + start) for m in WORD_RE.finditer(text[start:end])]
    return [
        _Span(tokens[i][0], tokens[min(i + max_tokens, len(tokens)) - 1][1], min(max_tokens, len(tokens) - i))
        for i in range(0, len(tokens), max_tokens)
    ]


def chunk_document(doc: Document, config: ChunkingConfig = ChunkingConfig()) -> list[Chunk]:
    """Pack whole sentences into chunks of at most `max_tokens`, repeating up to `overlap_tokens` worth of trailing
    sentences at the start of the next chunk (never across the document's units: a chunk lies on one PDF page)."""
    units: list[_Span] = []
    for s, e in split_sentences(doc.text):
        n = count_tokens(doc.text[s:e])  # >= 1: sentences are trimmed and never empty
        units.extend(_split_long(doc.text, s, e, config.max_tokens) if n > config.max_tokens else [_Span(s, e, n)])

    # A chunk stays inside one page (table row, message), so that its citation names one place.
    starts = [at for _, at in doc.units]

    def part(i: int) -> int:
        return bisect_right(starts, units[i].start)

    chunks: list[Chunk] = []
    i = 0
    while i < len(units):
        j, total = i, 0
        while j < len(units) and total + units[j].n_tokens <= config.max_tokens and (j == i or part(j) == part(i)):
            total += units[j].n_tokens
            j += 1
        start, end = units[i].start, units[j - 1].end
        text = doc.text[start:end]
        cid = content_id("chunk", doc.id, start, end)
        chunks.append(Chunk(cid, doc.id, len(chunks), text, start, end, count_tokens(text)))
        if j >= len(units):
            break
        if part(j) != part(i):  # a new page: no overlap with the last one
            i = j
            continue
        # Step back over trailing sentences that fit in the overlap, but always move forward.
        k, back = j, 0
        while k - 1 > i and back + units[k - 1].n_tokens <= config.overlap_tokens:
            back += units[k - 1].n_tokens
            k -= 1
        i = k
    return chunks


def chunk_documents(docs: Iterable[Document], config: ChunkingConfig = ChunkingConfig()) -> list[Chunk]:
    return [c for d in docs for c in chunk_document(d, config)]
