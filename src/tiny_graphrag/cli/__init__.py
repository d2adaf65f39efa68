"""The `tiny-graphrag` command line: `parser` declares it, `main` runs it."""

from tiny_graphrag.cli.commands import main

__all__ = ["main"]
