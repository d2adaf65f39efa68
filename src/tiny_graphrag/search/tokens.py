"""Token counting for budgets: the LLM's own tokenizer, or a stated, conservative fallback."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from tiny_graphrag.backends.llm import LLM

# Letter runs, single digits, newline runs, runs of 2+ spaces or tabs, a space before a digit,
# and single punctuation marks: the pieces the estimate prices.
_PIECE = re.compile(r"[^\W\d_]+|\d|\n+|[^\S\n]{2,}| (?=\d)|[^\w\s]|_", re.UNICODE)


def approximate_tokens(text: str) -> int:
    """An over-estimate of an LLM's token count, for when no LLM is loaded.

    Over-estimating keeps a context built without the model inside the budget once the model counts it. ASCII words
    count one token per 4 letters (rounded up), every non-ASCII letter one (CJK is about one token per character), every
    digit one (Gemma's SentencePiece splits numbers into digits, and a space before a digit is a token of its own),
    punctuation one each, a run of whitespace other than one space one per 16 characters.

    Promise (tests/test_tokens.py): never below the GGUF model's tokenizer (Gemma 3) on a text of 20 tokens or more, nor
    below WordPiece (MiniLM) on a context-sized text (1000+ characters) of prose, numbers, code or CJK. A short text of
    rare words can come out a token or two under WordPiece, which splits such words into pieces of 2-3 letters."""
    n = 0
    for piece in _PIECE.findall(text):
        if piece.isascii():  # a word, or one digit or mark, or a run of whitespace (up to 16 a token)
            n += math.ceil(len(piece) / (4 if piece.isalpha() else 16))
        else:
            ascii_part = sum(1 for ch in piece if ch.isascii())
            n += (len(piece) - ascii_part) + math.ceil(ascii_part / 4)
    return n


@dataclass(frozen=True)
class TokenCounter:
    """A named token counter; `exact` is False for the fallback estimate."""

    count: Callable[[str], int]
    name: str
    exact: bool

    def __call__(self, text: str) -> int:
        return self.count(text) if text else 0


FALLBACK = TokenCounter(approximate_tokens, "approximate (no LLM loaded)", exact=False)


def counter_for(llm: LLM | None) -> TokenCounter:
    """The LLM's tokenizer when there is an LLM, else the fallback."""
    return FALLBACK if llm is None else TokenCounter(llm.count_tokens, f"{llm.name} tokenizer", exact=True)
