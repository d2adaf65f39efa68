"""The command-line reference, written from the argparse parser itself so it cannot drift.

An MkDocs hook (mkdocs.yml `hooks:`): at build time it adds the page `reference/cli.md`, one
section per command and subcommand, walked generically from `tiny_graphrag.cli.parser.build_parser()`
(nothing here names an option). `python scripts/cli_reference.py` prints the page.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from typing import Any

PAGE = "reference/cli.md"
INTRO = """# Command line

Every command and option of `tiny-graphrag`, generated from its argparse parser when the site is
built (`scripts/cli_reference.py`), so this page is what `tiny-graphrag COMMAND --help` prints, in
one place. Every command also takes `-h`/`--help`. Defaults decided later (from the index, the
models folder, the environment) are given in the option's text.
"""


@contextlib.contextmanager
def _plain_environment() -> Iterator[None]:
    """No TINY_GRAPHRAG_* variables and a fixed width while the parser is built and formatted: a
    default read from the environment (serve's token) must not end up in the page."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("TINY_GRAPHRAG_") or k == "COLUMNS"}
    for key in saved:
        del os.environ[key]
    os.environ["COLUMNS"] = "88"
    try:
        yield
    finally:
        del os.environ["COLUMNS"]
        os.environ.update(saved)


def build_parser() -> argparse.ArgumentParser:
    from tiny_graphrag.cli.parser import build_parser as build

    with _plain_environment():
        return build()


def commands(parser: argparse.ArgumentParser, help_text: str = "") -> Iterator[tuple[argparse.ArgumentParser, str]]:
    """Every (sub)parser, depth first, with the help its parent gives it."""
    yield parser, help_text or (parser.description or "")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, child in action.choices.items():
                yield from commands(child, helps.get(name, ""))


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _invocation(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """The option as `--help` shows it (`-v, --verbose`, `--extractor {gliner,spacy}`); a positional
    by its name (`inputs`, `mode`), its choices going with its details."""
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    return f"`{formatter._format_action_invocation(action)}`"


def _details(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """The help as `--help` shows it (defaults included by the parser's formatter), and what the
    invocation does not say: required, repeatable."""
    text = formatter._expand_help(action) if action.help else ""
    notes = []
    if action.required or (not action.option_strings and action.nargs not in ("?", "*")):
        notes.append("required")
    if not action.option_strings and action.choices is not None:
        notes.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
    repeatable = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction)
    if isinstance(action, repeatable) and "repeatable" not in text:
        notes.append("repeatable")
    tail = f" ({', '.join(notes)})" if notes else ""
    return _cell(text + tail)


def _anchor(prog: str) -> str:
    return prog.replace(" ", "-")


def render(parser: argparse.ArgumentParser | None = None) -> str:
    parser = parser or build_parser()
    out = [INTRO]
    with _plain_environment():
        for command, help_text in commands(parser):
            depth = command.prog.count(" ")
            out.append(f"{'#' * min(depth + 2, 4)} `{command.prog}` {{#{_anchor(command.prog)}}}\n")
            if help_text:
                out.append(_cell(help_text[0].upper() + help_text[1:]).rstrip(".") + ".\n")
            out.append("```text\n" + command.format_usage().strip() + "\n```\n")
            rows = []
            formatter = command._get_formatter()
            for action in command._actions:
                if isinstance(action, argparse._HelpAction):
                    continue
                if isinstance(action, argparse._SubParsersAction):
                    for choice in action._choices_actions:
                        link = f"[`{choice.dest}`](#{_anchor(command.prog + ' ' + choice.dest)})"
                        rows.append(f"| {link} | {_cell(choice.help or '')} |")
                    continue
                rows.append(f"| {_invocation(action, formatter)} | {_details(action, formatter)} |")
            if rows:
                out.append("| argument | what it does |\n|---|---|\n" + "\n".join(rows) + "\n")
    return "\n".join(out)


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated page to the site."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=render()))
    return files


if __name__ == "__main__":
    print(render())
