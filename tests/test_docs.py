"""The documentation is checked like code: README.md and every page under docs/.

- Every ```python block runs, in page order, in a fresh copy of one small sandbox: `documents/`
  (two short files), `schema.toml`, and `graphs/mycorpus`, the index that the first example of
  docs/getting-started.md builds (built once per test session, shared by the xdist workers). A
  block that is not meant to run says so on the line before it: `<!-- docs-test: skip: why -->`.
- The examples name the demo's 0.5B reader; here the same code runs on SmolLM2-135M-Instruct, with
  every generation cut to a few tokens: this checks that the examples run, not what a model writes.
- Every `tiny-graphrag ...` line of a shell block parses with the real parser, every `make X`
  names a Makefile target, every TOML schema loads.
- The command-line reference (generated from the parser) names every option of every command.
- README.md: at most 150 lines, opening with `make demo` / `make test`; no commit hashes or dates;
  its relative links (and their anchors) resolve.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
SKIP = re.compile(r"<!--\s*docs-test:\s*skip:\s*(?P<why>.+?)\s*-->")
MAX_SKIPPED = 10  # examples that do not run are the exception: a few that need a GPU, Ray, or minutes of training
FIRST_INDEX = DOCS / "getting-started.md"  # its first example builds graphs/mycorpus, the index the others query
# The demo's 0.5B reader -> the 135M one the tests use (the same code, several times faster).
SUBSTITUTIONS = {"qwen2.5-coder-0.5b-instruct-q4_k_m.gguf": "SmolLM2-135M-Instruct.Q4_1.gguf"}
MAX_GENERATED_TOKENS = 16

# Small on purpose: every community is a report, and a report is two model calls here (a cut-off
# report is asked again, then replaced by the fallback).
DOCUMENTS = {
    "acme.txt": "Acme Corporation was founded in 1947 in Phoenix. Maria Lopez works for Acme Corporation.\n",
    "globex.md": "# Globex\n\nJohn Smith works for Globex Corporation in Chicago. He met Maria Lopez in Berlin.\n",
}
SCHEMA_TOML = """entity_types = ["Person", "Organization", "Location"]

[relation_types."works for"]
allowed_head = ["Person"]
allowed_tail = ["Organization"]

[relation_types."located in"]
allowed_head = ["Organization"]
allowed_tail = ["Location"]
"""


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    skip: str | None  # why it does not run

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page (``` fences, any indentation), with their skip markers."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        opening = re.match(r"^(\s*)```\s*([\w+-]*)", lines[i])
        if not opening:
            i += 1
            continue
        indent, lang, start = opening.group(1), opening.group(2).lower(), i
        body = []
        i += 1
        while i < len(lines) and not re.match(rf"^{indent}```\s*$", lines[i]):
            body.append(lines[i][len(indent) :])
            i += 1
        marker = SKIP.search(lines[start - 1]) if start else None
        out.append(Block(page, start + 1, lang, "\n".join(body) + "\n", marker.group("why") if marker else None))
        i += 1
    return out


ALL_BLOCKS = [b for page in PAGES for b in blocks(page)]
PYTHON_PAGES = [p for p in PAGES if any(b.lang == "python" and not b.skip for b in blocks(p))]


def _id(page: Path) -> str:
    return str(page.relative_to(ROOT))


# ---- running the Python examples ----------------------------------------------------------------


def _cap_generation(mp: pytest.MonkeyPatch) -> None:
    """Every generation cut to a few tokens, on one thread (the suite runs on every core already:
    llama.cpp's threads wait on each other when the cores are taken)."""
    from tiny_graphrag.backends import gguf
    from tiny_graphrag.backends.llm import LlamaCppLLM

    mp.setattr(gguf, "generation_threads", lambda config: 1)

    run_kwargs = LlamaCppLLM._run_kwargs

    def capped(self, *args, **kwargs):
        out = run_kwargs(self, *args, **kwargs)
        out["max_tokens"] = min(out["max_tokens"], MAX_GENERATED_TOKENS)
        return out

    mp.setattr(LlamaCppLLM, "_run_kwargs", capped)


def _run(block: Block, namespace: dict) -> None:
    code = block.code
    for old, new in SUBSTITUTIONS.items():
        code = code.replace(old, new)
    try:
        exec(compile(code, block.where, "exec"), namespace)
    except Exception as exc:
        raise AssertionError(f"the example at {block.where} failed: {type(exc).__name__}: {exc}") from exc


@contextlib.contextmanager
def _example_environment(folder: Path, models: Path):
    from tiny_graphrag.backends.loaded import clear_models
    from tiny_graphrag.extract import base

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        mp.setenv("TINY_GRAPHRAG_MODELS", str(models))
        mp.setattr(base, "_REGISTRY", dict(base._REGISTRY))  # an example's register_extractor stays in it
        _cap_generation(mp)
        clear_models("gguf")  # loaded here on one thread, and only here: other tests load their own
        try:
            yield
        finally:
            clear_models("gguf")


@pytest.fixture(scope="session")
def docs_sandbox(tmp_path_factory: pytest.TempPathFactory, smollm_path: Path) -> Path:
    """The folder every page's examples start from, built once (xdist workers share it under a lock)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, common to its workers
    sandbox = base / "docs-sandbox"
    with open(base / "docs-sandbox.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (sandbox / ".ready").exists():
            shutil.rmtree(sandbox, ignore_errors=True)
            (sandbox / "documents").mkdir(parents=True)
            for name, text in DOCUMENTS.items():
                (sandbox / "documents" / name).write_text(text, encoding="utf-8")
            (sandbox / "schema.toml").write_text(SCHEMA_TOML, encoding="utf-8")
            first = next(b for b in blocks(FIRST_INDEX) if b.lang == "python")
            assert "graphs/mycorpus" in first.code, f"{first.where} should build graphs/mycorpus"
            with _example_environment(sandbox, smollm_path.parent):
                _run(first, {"__name__": "__docs__"})
            assert (sandbox / "graphs" / "mycorpus" / "manifest.json").is_file()
            (sandbox / ".ready").touch()
    return sandbox


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=_id)
def test_python_examples_run(page: Path, docs_sandbox: Path, smollm_path: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(docs_sandbox, work, symlinks=True)
    namespace: dict = {"__name__": "__docs__"}  # shared by the page's blocks, as a reader runs them in order
    with _example_environment(work, smollm_path.parent):
        for block in blocks(page):
            if block.lang == "python" and not block.skip:
                _run(block, namespace)


def test_every_python_example_compiles_and_few_are_skipped() -> None:
    python = [b for b in ALL_BLOCKS if b.lang == "python"]
    assert len(python) >= 10
    for block in python:
        compile(block.code, block.where, "exec")  # a skipped example is still valid Python
    skipped = [b.where for b in python if b.skip]
    assert len(skipped) <= MAX_SKIPPED, f"too many examples do not run: {skipped}"
    unmarked = [b.where for b in ALL_BLOCKS if b.skip and b.lang != "python"]
    assert not unmarked, f"skip markers only go before python blocks: {unmarked}"


# ---- shell and TOML examples --------------------------------------------------------------------


def _shell_commands(block: Block) -> list[str]:
    """The block's commands: `$ ` prompts dropped, continuation lines joined."""
    commands, current = [], ""
    for raw in block.code.splitlines():
        line = raw.strip()
        if line.startswith("$ "):
            line = line[2:]
        if current:
            line = current + " " + line
            current = ""
        if line.endswith("\\"):
            current = line[:-1].rstrip()
            continue
        if line:
            commands.append(line)
    return commands


SHELL = [b for b in ALL_BLOCKS if b.lang in ("bash", "sh", "shell", "console")]
# Transcripts (```text) show their commands after a `$ ` prompt.
PROMPTED = [
    (b, line[2:]) for b in ALL_BLOCKS if b.lang == "text" for line in b.code.splitlines() if line.startswith("$ ")
]
CLI_LINES = [(b, c) for b in SHELL for c in _shell_commands(b) if c.startswith("tiny-graphrag ")] + [
    (b, c) for b, c in PROMPTED if c.startswith("tiny-graphrag ")
]


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    from tiny_graphrag.cli.parser import build_parser

    return build_parser()


def test_the_docs_show_the_command_line() -> None:
    assert len(CLI_LINES) >= 30  # the guides show most commands


def test_every_cli_example_parses(parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture) -> None:
    failures = []
    for block, command in CLI_LINES:
        argv = shlex.split(command, comments=True)[1:]
        if "|" in argv:  # piped into another program
            argv = argv[: argv.index("|")]
        try:
            parser.parse_args(argv)
        except SystemExit:
            failures.append(f"{block.where}: {command}\n    {capsys.readouterr().err.strip().splitlines()[-1]}")
    assert not failures, "CLI examples the parser refuses:\n" + "\n".join(failures)


def test_every_make_target_exists() -> None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    named = {(b.where, m.group(1)) for b in SHELL for c in _shell_commands(b) if (m := re.match(r"make ([\w-]+)", c))}
    assert named, "the docs name make targets"
    missing = sorted(f"{where}: make {t}" for where, t in named if t not in targets)
    assert not missing, missing


def test_every_toml_schema_loads(tmp_path: Path) -> None:
    from tiny_graphrag.schema import Schema

    schemas = [b for b in ALL_BLOCKS if b.lang == "toml" and "entity_types" in b.code]
    assert schemas
    for i, block in enumerate(schemas):
        path = tmp_path / f"schema{i}.toml"
        path.write_text(block.code, encoding="utf-8")
        try:
            Schema.from_file(path)
        except Exception as exc:
            raise AssertionError(f"the schema at {block.where} does not load: {exc}") from exc
    (tmp_path / "sandbox.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    Schema.from_file(tmp_path / "sandbox.toml")


# ---- the command-line reference -----------------------------------------------------------------


def _parsers(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [p]
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += _parsers(child)
    return found


def test_the_cli_reference_names_every_option_of_every_command() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import cli_reference
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    page = cli_reference.render()
    sections = dict(re.findall(r"^#+ `([^`]+)` \{#[\w-]+\}\n(.*?)(?=^#+ `|\Z)", page, re.M | re.S))
    parsers = _parsers(cli_reference.build_parser())
    assert len(parsers) >= 14  # build, add, remove, info, query, evaluate, models (4), export, view, serve
    missing = []
    for p in parsers:
        section = sections.get(p.prog)
        if section is None:
            missing.append(f"no section for `{p.prog}`")
            continue
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                names = list(action.choices)
            else:
                names = list(action.option_strings) or [action.metavar or action.dest]
            missing += [
                f"`{p.prog}`: {n}" for n in names if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", section)
            ]
    assert not missing, missing


def test_the_python_reference_documents_every_public_name() -> None:
    import tiny_graphrag

    page = (DOCS / "reference" / "python.md").read_text(encoding="utf-8")
    documented = {target.rsplit(".", 1)[-1] for target in re.findall(r"^::: ([\w.]+)", page, re.M)}
    missing = sorted(set(tiny_graphrag.__all__) - documented - {"__version__"})
    assert not missing, f"add these to docs/reference/python.md: {missing}"


# ---- README -------------------------------------------------------------------------------------


def test_readme_opens_with_the_two_commands_and_fits_two_screens() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    first = blocks(README)[0]
    assert text.index("```") < text.index("\n## "), "the commands come before any section"
    assert first.lang == "bash"
    assert [c.split("#")[0].strip() for c in _shell_commands(first)] == ["make demo", "make test"]


def test_readme_has_no_commit_hashes_or_dates() -> None:
    text = README.read_text(encoding="utf-8")
    hashes = re.findall(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b", text)
    dates = re.findall(r"\b20\d\d-\d\d-\d\d\b", text)
    assert not hashes and not dates, (hashes, dates)


def _github_anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links
    broken = []
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path
        if not target.exists():
            broken.append(link)
        elif anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            if anchor not in {_github_anchor(h) for h in headings}:
                broken.append(link)
    assert not broken, broken


# ---- version and changelog ----------------------------------------------------------------------


def test_the_version_is_kept_in_one_place_and_the_changelog_names_it() -> None:
    import tiny_graphrag
    from tiny_graphrag.config import VERSION

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and 'attr = "tiny_graphrag.config.VERSION"' in pyproject
    assert tiny_graphrag.__version__ == VERSION
    versions = re.findall(r"^## (\d+\.\d+\.\d+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert versions and versions[0] == VERSION, (versions[:1], VERSION)
