"""Token counting for budgets: the LLM's own tokenizer, or a stated, conservative fallback."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

_PIECE = re.compile(r"[^\W\d_]+|\d+|[^\w\s]|_", re.UNICODE)


def approximate_tokens(text: str) -> int:
    """An over-estimate of BPE/SentencePiece token counts, for when no LLM is loaded.

    Over-estimating keeps a context built without the model inside the budget once the model
    counts it: ASCII words count one token per 4 letters (rounded up), digits one per 3, every
    non-ASCII letter one token (CJK is about one token per character), punctuation one each.
    """
    n = 0
    for piece in _PIECE.findall(text):
        if piece.isdigit():
            n += math.ceil(len(piece) / 3)
        elif piece.isascii():
            n += math.ceil(len(piece) / 4) if piece.isalpha() else 1
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


def counter_for(llm) -> TokenCounter:
    """The LLM's tokenizer when there is an LLM, else the fallback."""
    if llm is None:
        return FALLBACK
    return TokenCounter(llm.count_tokens, f"{llm.name} tokenizer", exact=True)
