"""Nothing outside an index is ever removed or overwritten, and bad paths never become an index.

Each case builds through the real CLI (`tiny_graphrag.cli.commands.main`) in-process; most are refused
before any model loads. "Intact" is checked byte for byte over every file under the folder.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tiny_graphrag.cli.commands import main
from tiny_graphrag.errors import OutputError
from tiny_graphrag.index.placement import STAGING_MARKER, check_output, staging_dir

TEXT = "Barack Obama was born in Honolulu. Obama studied at Harvard Law School in Cambridge.\n"
BUILD = ["--extractor", "spacy", "--no-reports"]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under folder (hidden ones too) -> sha256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(TEXT, encoding="utf-8")
    (docs / "thesis.md").write_text("# Thesis\n\nMichelle Obama grew up in Chicago.\n", encoding="utf-8")
    (docs / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0" + os.urandom(64))
    return tmp_path


def run(*args: str) -> int:
    return main([*map(str, args)])


@pytest.mark.parametrize("out", ["docs", "docs/index", "docs/sub/deeper"])
def test_output_in_or_equal_to_an_input_is_refused(work, capsys, out):
    before = snapshot(work / "docs")
    assert run("build", "docs", "--out", out, *BUILD) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "--out" in err and "Traceback" not in err
    assert snapshot(work / "docs") == before


def test_input_inside_the_output_index_is_refused(work, capsys):
    assert run("build", "docs/a.txt", "--out", "graphs/x", *BUILD) == 0
    (work / "graphs" / "x" / "notes.txt").write_text(TEXT + "Extra.", encoding="utf-8")
    before = snapshot(work / "graphs")
    assert run("build", "graphs/x/notes.txt", "--out", "graphs/x", *BUILD) == 2
    assert "inside --out" in capsys.readouterr().err
    assert snapshot(work / "graphs") == before


@pytest.mark.parametrize("make", ["user_folder", "graphs_parent", "file", "cwd", "parent_of_cwd"])
def test_existing_non_index_outputs_are_refused_and_kept(work, capsys, make):
    other = work / "other"
    other.mkdir()
    (other / "thesis.docx").write_bytes(b"PK\x03\x04 not ours")
    (other / ".hidden").write_text("keep me")
    out = {"user_folder": "other", "file": "other/thesis.docx", "cwd": ".", "parent_of_cwd": ".."}.get(make)
    if make == "graphs_parent":  # a folder of indexes and the shared call cache
        assert run("build", "docs/a.txt", "--out", "graphs/one", *BUILD) == 0
        out = "graphs"
    before = snapshot(work)
    assert run("build", "docs", "--out", out, *BUILD) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err and "--out" in err
    assert snapshot(work) == before


def test_empty_folder_and_existing_index_are_replaced(work):
    (work / "empty").mkdir()
    assert run("build", "docs/a.txt", "--out", "empty", *BUILD) == 0
    assert (work / "empty" / "manifest.json").is_file()
    first = (work / "empty" / "manifest.json").read_text()
    assert run("build", "docs", "--out", "empty", *BUILD) == 0  # an index: replaced
    assert (work / "empty" / "manifest.json").read_text() != first


def test_unfinished_index_needs_force(work, capsys):
    out = work / "graphs" / "broken"
    out.mkdir(parents=True)
    (out / "index.sqlite").write_bytes(b"half")
    (out / "vectors").mkdir()
    assert run("build", "docs/a.txt", "--out", out, *BUILD) == 2
    assert "--force" in capsys.readouterr().err
    assert (out / "index.sqlite").read_bytes() == b"half"
    assert run("build", "docs/a.txt", "--out", out, "--force", *BUILD) == 0
    assert (out / "manifest.json").is_file()
    # --force never replaces a folder of other files
    (work / "mine").mkdir()
    (work / "mine" / "a.csv").write_text("1,2")
    assert run("build", "docs/a.txt", "--out", "mine", "--force", *BUILD) == 2
    assert (work / "mine" / "a.csv").read_text() == "1,2"


@pytest.mark.parametrize(
    "bad, message",
    [
        ("in/typo_dir", "does not exist"),
        ("missing.pdf", "does not exist"),
        ("loop", "broken symbolic link"),
        ("docs/photo.jpg", "unsupported file type"),
    ],
)
def test_bad_inputs_never_become_an_index(work, capsys, bad, message):
    os.symlink("loop", work / "loop")
    assert run("build", bad, "--out", "graphs/g", *BUILD) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (work / "graphs" / "g").exists()
    assert not list((work / "graphs").glob(".g.building-*")) if (work / "graphs").exists() else True


def test_folder_with_unsupported_files_lists_them(work, capsys):
    assert run("build", "docs", "--out", "graphs/d", *BUILD, "--json") == 0
    out = capsys.readouterr()
    assert "photo.jpg" in out.out  # in the summary
    assert run("info", "graphs/d", "--json") == 0
    assert "photo.jpg" in capsys.readouterr().out


def test_only_marked_staging_folders_are_cleaned(work):
    foreign = work / "graphs" / ".g.building-999999"  # a dead pid, but not our folder
    foreign.mkdir(parents=True)
    (foreign / "keep.txt").write_text("mine")
    ours = work / "graphs" / ".g.building-999998"
    ours.mkdir()
    (ours / STAGING_MARKER).write_text("")
    assert run("build", "docs/a.txt", "--out", "graphs/g", *BUILD) == 0
    assert (foreign / "keep.txt").read_text() == "mine"
    assert not ours.exists()


def test_unwritable_output_location_is_a_clear_error(work, monkeypatch):
    def refuse(self, *a, **k):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(OutputError, match="cannot write"):
        staging_dir(work / "ro" / "idx")


def test_check_output_accepts_new_paths_and_links_to_indexes(work):
    assert check_output(Path("graphs/new")) == work / "graphs" / "new"
    assert run("build", "docs/a.txt", "--out", "graphs/real", *BUILD) == 0
    os.symlink(work / "graphs" / "real", work / "link")
    assert run("build", "docs", "--out", "link", *BUILD) == 0  # replaces the index the link names
    assert (work / "link").is_symlink() and (work / "graphs" / "real" / "manifest.json").is_file()
