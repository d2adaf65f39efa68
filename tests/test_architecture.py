"""The package's shape, checked on its import graph: every import counts, at the top of a module,
inside a function or under TYPE_CHECKING (a type-only arrow is still a dependency a reader follows).

- no import circle between modules;
- a search mode never imports the engine (the facade): it is a function over a SearchIndex;
- storage (index/) imports no display code (outputs/) and no build or search code;
- no `_private` name is imported from another module;
- modules stay under the size a reader takes in at once, and the top level stays small;
- docs/architecture.md's table of packages names every module there is, and none that is gone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "tiny_graphrag"
MAX_MODULE_LINES = 400
MAX_TOP_LEVEL_MODULES = 10


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str) -> list[tuple[str, list[str]]]:
    """(module imported, names taken from it) for every import statement of module `name`."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [a.name for a in node.names]
            # `from pkg import module` imports the module, not a name of the package
            subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in MODULES]
            out += [(s, []) for s in subs] or [(base, names)]
    return [(m, names) for m, names in out if m.split(".")[0] == "tiny_graphrag"]


def graph() -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(MODULES)
    for name in MODULES:
        for target, _ in imports(name):
            while target not in MODULES and "." in target:
                target = target.rpartition(".")[0]
            # a package's __init__ re-exporting its own modules is not an arrow back to its user
            if target != name:
                g.add_edge(name, target)
    return g


def test_no_import_circle():
    cycles = list(nx.simple_cycles(graph()))
    assert not cycles, f"import circles: {cycles[:5]}"


@pytest.mark.parametrize("mode", ["local", "naive", "global_search", "tree_search", "index"])
def test_a_search_mode_never_imports_the_engine(mode):
    reached = nx.descendants(graph(), f"tiny_graphrag.search.{mode}")
    assert "tiny_graphrag.search.engine" not in reached


def test_storage_imports_no_display_build_or_search_code():
    g = graph()
    for name in [m for m in MODULES if m.startswith("tiny_graphrag.index.")]:
        bad = [t for t in g.successors(name) if t.split(".")[1] in ("outputs", "indexing", "search", "cli", "reports")]
        assert not bad, f"{name} imports {bad}"


def test_no_private_name_crosses_modules():
    crossing = [
        (name, target, n)
        for name in MODULES
        for target, names in imports(name)
        for n in names
        if n.startswith("_") and not n.startswith("__")
    ]
    assert not crossing, crossing


def test_module_sizes_and_top_level():
    long = {
        n: c for n, p in MODULES.items() if (c := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"
    top = [p.name for p in PACKAGE.glob("*.py")]
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_the_architecture_page_names_each_module_of_each_package():
    import re

    rows = {}
    for line in (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        if m := re.fullmatch(r"\| (?:`(\w+)/`|top level) \| (.*) \|", line.strip()):
            rows[m.group(1) or ""] = m.group(2)
    assert rows.keys() == {""} | {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    for package, text in rows.items():
        folder = PACKAGE / package
        modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "__main__"}
        modules |= {p.parent.name for p in folder.glob("*/__init__.py")} if package else set()
        named = set(re.findall(r"`(\w+)/?`", text))
        described = set(re.findall(r"`(\w+)/?` \(", text))  # "`store` (...)": a module with what it holds
        assert modules <= named, f"docs/architecture.md, {package or 'top level'}: not named {modules - named}"
        assert described <= modules, f"docs/architecture.md, {package or 'top level'}: gone {described - modules}"


def test_the_checker_sees_a_circle(tmp_path, monkeypatch):
    """The checker itself: two modules importing each other (one under TYPE_CHECKING) are a circle."""
    pkg = tmp_path / "tiny_graphrag"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from tiny_graphrag.b import B\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tiny_graphrag.a import A\nB = 1\n"
    )
    monkeypatch.setattr(__import__(__name__), "SRC", tmp_path)
    monkeypatch.setattr(__import__(__name__), "MODULES", {module_name(p): p for p in pkg.rglob("*.py")})
    assert list(nx.simple_cycles(graph())) in (
        [["tiny_graphrag.a", "tiny_graphrag.b"]],
        [["tiny_graphrag.b", "tiny_graphrag.a"]],
    )
