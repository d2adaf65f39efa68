"""Evidence for a small reader: the sentences of the retrieved passages that bear on the question.

A 0.5B reader handed thousands of tokens of retrieved passages answers far worse than from the few passages that hold
the answer (bench/RESULTS.md): it loses the answer among distractors (Liu et al., "Lost in the Middle", 2023). Selecting
sentences within the passages before the model reads them (FILCO, Wang et al. 2023; RECOMP, Xu et al. 2023) keeps the
answer and drops most of the rest. Here every sentence of the best `passages` retrieved passages is scored against the
question by three signals that need no model call:

    score = cosine(question, "title: sentence") + lexical x (share of the question's words in
            the title and sentence) + prior x (1 for the best passage ... 0 for the last)

For a question that needs two hops (the county where a township is, then that county's seat), the second hop's sentence
shares few words with the question; it names what the first hop's best sentence names. So the question joined with its
best sentence is scored again (IRCoT's step, Trivedi et al. 2023, with the sentence in place of the model's thought),
and a sentence keeps the better of its two scores; `more` may fetch passages for that joined question too.

The kept sentences, best first, fill the budget; they are shown by passage, as HippoRAG 2's reader sees passages ("[n]
Title: text"), sentences in text order, passages in order of their best sentence with the best last, next to the
question."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import zip_longest

import numpy as np

from tiny_graphrag.indexing.chunking import split_sentences
from tiny_graphrag.records import Chunk
from tiny_graphrag.search.config import EvidenceConfig
from tiny_graphrag.tables import Count, pack

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that say what kind of answer is wanted, not what it is about.
STOPWORDS = frozenset(
    "a an the of in on at to for by with from and or is was were are be been being what which who whom whose "
    "when where why how did does do that this these those it its as into than then there their his her he she "
    "they them has have had not no yes can could would should will about after before between during".split()
)
ELLIPSIS = " … "
_ENDS = (".", "!", "?", '"', "”", "'", ")")


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk as the reader sees it: a title, and its text after any title line."""

    chunk: Chunk
    title: str
    body: int  # where the text after a title line starts in chunk.text


@dataclass(frozen=True)
class Sentence:
    passage: Passage
    start: int  # offsets into passage.chunk.text
    end: int
    score: float

    @property
    def text(self) -> str:
        return self.passage.chunk.text[self.start : self.end]


@dataclass(frozen=True)
class Evidence:
    """What the reader is shown: `text`, made of `kept` (by passage, in shown order); `ranked`: every
    candidate sentence, best first (bench reads where a gold sentence ranked)."""

    text: str
    tokens: int
    kept: tuple[Sentence, ...]
    ranked: tuple[Sentence, ...]

    @property
    def chunks(self) -> list[Chunk]:
        return list(dict.fromkeys(s.passage.chunk for s in self.kept))


def title_line(text: str) -> str:
    """A chunk's first line when it reads as a heading (short words, text after it, no sentence end even inside closing
    quotes): the title of a passage or a section, else "" (a line of dialogue, '... pawns."', or a markdown rule)."""
    head, sep, rest = text.partition("\n")
    head = head.strip()
    heading = (
        sep and rest.strip() and len(head.split()) <= 16 and not head.rstrip("\"”'’").endswith((".", "?", "!", ":"))
    )
    return head if heading and any(c.isalnum() for c in head) else ""


def passage_of(chunk: Chunk, fallback_title: str) -> Passage:
    """`fallback_title` (the document's name and place) when the chunk does not open with a heading."""
    head = title_line(chunk.text)
    return Passage(chunk, head, chunk.text.index("\n") + 1) if head else Passage(chunk, fallback_title, 0)


def sentences_of(p: Passage) -> list[tuple[int, int]]:
    """The sentences of a passage's text after its title, less the section headings inside it (a
    paragraph of one short line with no end punctuation, "University of Chicago Law School"): shown
    last, next to the question, a heading was taken for the answer."""
    text = p.chunk.text
    spans = [(p.body + s, p.body + e) for s, e in split_sentences(text[p.body :])]

    def heading(s: int, e: int) -> bool:
        alone = not text[:s].strip(" \t") or text[:s].rstrip(" \t").endswith("\n\n")
        alone = alone and (not text[e:].strip(" \t") or text[e:].lstrip(" \t").startswith("\n\n"))
        line = text[s:e]
        return alone and "\n" not in line and len(line.split()) <= 12 and not line.endswith(_ENDS)

    kept = [(s, e) for s, e in spans if not heading(s, e)]
    return kept or spans


def unique(
    cands: list[tuple[Passage, int, int]], seen: Sequence[tuple[Passage, int, int]] = ()
) -> list[tuple[Passage, int, int]]:
    """Each sentence once (overlapping chunks repeat their shared sentences), from its best passage."""
    have = {" ".join(p.chunk.text[s:e].split()) for p, s, e in seen}
    out = []
    for p, s, e in cands:
        key = " ".join(p.chunk.text[s:e].split())
        if key not in have:
            have.add(key)
            out.append((p, s, e))
    return out


def _scores(
    texts: Sequence[str], vectors: np.ndarray, qvec: np.ndarray, words: set[str], prior: np.ndarray, c: EvidenceConfig
) -> np.ndarray:
    lexical = np.array([len(words & content_words(t)) / max(1, len(words)) for t in texts], dtype=np.float32)
    return vectors @ np.asarray(qvec, dtype=np.float32) + c.lexical_weight * lexical + c.prior_weight * prior


def select_evidence(
    query: str,
    qvec: np.ndarray,
    chunks: Sequence[Chunk],
    *,
    title_of: Callable[[Chunk], str],
    embed: Callable[[list[str]], np.ndarray],
    count: Count,
    budget: int,
    config: EvidenceConfig,
    more: Callable[[str, np.ndarray], Sequence[Chunk]] | None = None,
) -> Evidence:
    """The best sentences of `chunks` (ranked passages, best first) for `query`, within `budget`
    tokens; `title_of`: the title shown for a chunk with no heading of its own."""
    passages = [passage_of(c, title_of(c)) for c in chunks[: config.passages]]
    cands = unique([(p, s, e) for p in passages for s, e in sentences_of(p)])
    if not cands:
        return Evidence("", 0, (), ())
    text_of = [f"{p.title}: {p.chunk.text[s:e]}" if p.title else p.chunk.text[s:e] for p, s, e in cands]
    rank = {id(p): i for i, p in enumerate(passages)}
    prior = np.array([1 - rank[id(p)] / max(1, len(passages) - 1) for p, _, _ in cands], dtype=np.float32)
    vectors = np.asarray(embed(text_of), dtype=np.float32)
    words = content_words(query)
    score = _scores(text_of, vectors, qvec, words, prior, config)
    if config.second_hop and len(cands) > 1:
        top = [int(i) for i in np.argsort(-score, kind="stable")[: config.hops]]
        hops = [f"{query} {text_of[i]}" for i in top]
        hop_vecs = np.asarray(embed(hops), dtype=np.float32)
        if more is not None:  # passages a joined question finds that the question alone did not
            seen = {p.chunk.id for p in passages}
            extra: list[Passage] = []
            for hop, vec in zip(hops, hop_vecs):
                found = [c for c in more(hop, vec) if c.id not in seen][: config.hop_passages]
                seen.update(c.id for c in found)
                extra += [passage_of(c, title_of(c)) for c in found]
            new = unique([(p, s, e) for p in extra for s, e in sentences_of(p)], cands)
            if new:
                new_text = [f"{p.title}: {p.chunk.text[s:e]}" if p.title else p.chunk.text[s:e] for p, s, e in new]
                cands, text_of = cands + new, text_of + new_text
                vectors = np.vstack([vectors, np.asarray(embed(new_text), dtype=np.float32)])
                prior = np.concatenate([prior, np.zeros(len(new), dtype=np.float32)])
                score = np.concatenate(
                    [score, _scores(new_text, vectors[-len(new) :], qvec, words, prior[-len(new) :], config)]
                )
        # each hop: the question joined with one of its best sentences, whose names (capitalized
        # words the question does not have) a bridge sentence shares
        second = np.full(len(cands), -np.inf, dtype=np.float32)
        for i, vec in zip(top, hop_vecs):
            names = {w.lower() for w in _WORD.findall(text_of[i]) if w[0].isupper()} - words - STOPWORDS
            second = np.maximum(second, _scores(text_of, vectors, vec, names, prior, config))
        second[top] = score[top]
        first = [int(i) for i in np.argsort(-score, kind="stable")]
        score = np.maximum(score, config.hop_weight * second)
        # one hop's best, then the others' (not the first hop's best themselves), and so on: a
        # bridge sentence shares few words with the question and would rank below its distractors
        hop_order = [int(i) for i in np.argsort(-second, kind="stable") if int(i) not in top]
        order = list(dict.fromkeys(i for pair in zip_longest(first, hop_order) for i in pair if i is not None))
    else:
        order = [int(i) for i in np.argsort(-score, kind="stable")]
    ranked = [Sentence(cands[i][0], cands[i][1], cands[i][2], float(score[i])) for i in order]
    floor = max(max(s.score for s in ranked) * config.min_share, config.min_score)
    wanted = [s for s in ranked if s.score >= floor]
    text, kept, n = pack(wanted, lambda s, kept: count(s.text) + 4, render, budget, count)
    return Evidence(text, n, tuple(kept), tuple(ranked))


def render(kept: Sequence[Sentence]) -> str:
    """ "[n] Title: sentence … sentence" per passage; passages by their best sentence, best last."""
    by_passage: dict[int, list[Sentence]] = {}
    for s in kept:  # best first
        by_passage.setdefault(id(s.passage), []).append(s)
    blocks = []
    for n, group in enumerate(reversed(list(by_passage.values())), start=1):
        p = group[0].passage
        parts = sorted(group, key=lambda s: s.start)
        body = parts[0].text
        for a, b in zip(parts, parts[1:]):
            gap = p.chunk.text[a.end : b.start]
            body += (" " if not gap.strip() else ELLIPSIS) + b.text
        blocks.append(f"[{n}] {p.title}: {body}" if p.title else f"[{n}] {body}")
    return "\n\n".join(blocks)
