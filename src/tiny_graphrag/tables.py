"""Data tables for prompts within a token budget: one packer for search and report contexts.

Tables use GraphRAG's "-----Name-----" headers and "|"-separated rows; the first column is the
id the model cites. A table is measured again as a whole after packing, so it never exceeds its
budget even where a tokenizer merges tokens across row boundaries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Count = Callable[[str], int]


def row(*values: Any) -> str:
    """A table row: each cell on one line, with "|" in a value written as "/"."""
    return "|".join(" ".join(str(v).split()).replace("|", "/") for v in values)


def pack_table(
    title: str, header: str, rows: Sequence[tuple[str, Any]], budget: int, count: Count
) -> tuple[str, list[Any], int]:
    """The table of as many rows as fit in `budget` tokens, in order (a row too big is skipped), as
    (text, payloads of the rows kept, tokens); an empty table is "" (0 tokens)."""
    head = f"-----{title}-----\n{header}"
    used = count(head + "\n")
    if used >= budget:
        return "", [], 0
    kept: list[tuple[str, Any]] = []
    for text, payload in rows:
        cost = count(text + "\n")
        if used + cost <= budget:
            kept.append((text, payload))
            used += cost
    while kept:
        table = head + "\n" + "\n".join(t for t, _ in kept)
        n = count(table)
        if n <= budget:
            return table, [p for _, p in kept], n
        kept.pop()  # measured as a whole it is over: drop the last row and measure again
    return "", [], 0
