"""Fitting text into a token budget: one packer and one bisection for every context and prompt.

`pack` fills a budget with items in order and measures the rendered whole again, dropping the last item until it fits,
so a context never exceeds its budget even where a tokenizer merges tokens across item boundaries. `longest_fit` finds
the longest prefix that fits by bisection. Tables use GraphRAG's "-----Name-----" headers and "|"-separated rows; the
first column is the id the model cites."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

Count = Callable[[str], int]
T = TypeVar("T")


def pack(
    items: Sequence[T],
    cost: Callable[[T, list[T]], int],
    render: Callable[[list[T]], str],
    budget: int,
    count: Count,
    *,
    used: int = 0,
) -> tuple[str, list[T], int]:
    """As many `items` as fit in `budget` tokens, in order (one too big is skipped), as (text, items kept, tokens);
    `cost(item, kept)` is an item's share after those kept so far, `used` what the frame costs.
    The rendered whole is measured again and loses its last item until it fits; nothing: ("", [], 0)."""
    kept: list[T] = []
    for item in items:
        c = cost(item, kept)
        if used + c <= budget:
            kept.append(item)
            used += c
    while kept:
        text = render(kept)
        n = count(text)
        if n <= budget:
            return text, kept, n
        kept.pop()  # measured as a whole it is over: drop the last item and measure again
    return "", [], 0


def longest_fit(n: int, fits: Callable[[int], bool]) -> int:
    """The largest k in [0, n] with fits(k), for a `fits` true up to some k and false after (a
    longer prefix never takes fewer tokens); fits(0) is taken as true without asking."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def fit_text(text: str, budget: int, count: Count, *, ellipsis: str = " …") -> str:
    """The longest prefix of `text` (whole words) that fits in `budget` tokens with `ellipsis`."""
    if count(text) <= budget:
        return text
    words = text.split(" ")
    k = longest_fit(len(words), lambda m: count(" ".join(words[:m]) + ellipsis) <= budget)
    return " ".join(words[:k]) + ellipsis if k else ""


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
    text, kept, n = pack(
        rows,
        lambda r, _: count(r[0] + "\n"),
        lambda k: head + "\n" + "\n".join(t for t, _ in k),
        budget,
        count,
        used=used,
    )
    return text, [p for _, p in kept], n
