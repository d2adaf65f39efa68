"""Walk a local search's query through the library's files, the way a reader follows it.

    python scripts/walk.py graphs/obama "Where did Obama study law?" [--depth 2]

Runs `QueryEngine.local_search(query, only_context=True)` (no model call) under a tracer and
lists, in call order, the library functions entered at most `--depth` library calls below
`local_search` (1: what local_search itself calls; 2: what those call too). A *stay* is a run of
consecutive calls in one file; a *return* is a stay in a file the walk had already left. Issue 29
asks for at most 12 stays and 3 returns (depth 2). Calls of code the library does not hold
(numpy, networkx, generated dataclass methods) do not count, nor do their callbacks.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import tiny_graphrag
from tiny_graphrag import QueryEngine

PACKAGE = str(Path(tiny_graphrag.__file__).resolve().parent)


def walk(engine: QueryEngine, query: str, depth: int) -> list[tuple[str, str]]:
    """(file relative to the package, function) of each library call within `depth` of local_search."""
    calls: list[tuple[str, str]] = []
    root: list[FrameType] = []

    def library_depth(frame: FrameType) -> int | None:
        """Library frames between `frame` and local_search's (None: not below local_search)."""
        n, f = 0, frame.f_back
        while f is not None:
            if f is root[0]:
                return n + 1
            if f.f_code.co_filename.startswith(PACKAGE):
                n += 1
            f = f.f_back
        return None

    def tracer(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        name = frame.f_code.co_filename
        if not root:
            if frame.f_code.co_name == "local_search" and name.startswith(PACKAGE):
                root.append(frame)
                calls.append((name[len(PACKAGE) + 1 :], "local_search"))
            return
        if not name.startswith(PACKAGE) or frame.f_code.co_name.startswith("<"):
            return  # comprehensions and generator expressions belong to the function around them
        d = library_depth(frame)
        if d is not None and d <= depth:
            calls.append((name[len(PACKAGE) + 1 :], frame.f_code.co_name))

    sys.setprofile(tracer)
    try:
        engine.local_search(query, only_context=True)
    finally:
        sys.setprofile(None)
    return calls


def stays(calls: list[tuple[str, str]]) -> tuple[list[tuple[str, list[str]]], int]:
    """Consecutive calls in one file merged into a stay; and how many stays return to a file left before."""
    out: list[tuple[str, list[str]]] = []
    for file, fn in calls:
        if out and out[-1][0] == file:
            out[-1][1].append(fn)
        else:
            out.append((file, [fn]))
    seen: set[str] = set()
    returns = 0
    for file, _ in out:
        returns += file in seen
        seen.add(file)
    return out, returns


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("index")
    p.add_argument("query")
    p.add_argument("--depth", type=int, default=2)
    args = p.parse_args()
    with QueryEngine(args.index) as engine:
        engine.local_search(args.query, only_context=True)  # loads lazily held models outside the walk
        out, returns = stays(walk(engine, args.query, args.depth))
    for i, (file, fns) in enumerate(out, 1):
        print(f"{i:3d}  {file:32s} {', '.join(dict.fromkeys(fns))}")
    print(f"{len(out)} stays in {len({f for f, _ in out})} files, {returns} returns (depth {args.depth})")


if __name__ == "__main__":
    main()
