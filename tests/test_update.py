"""Incremental indexes (issue 14): add and remove equal a fresh build, unchanged communities keep
their reports without a model call, updates are atomic and locked, and bad input is refused.

Real models: the spaCy extractor, the MiniLM embedder and (for reports) SmolLM2 through llama.cpp.
"""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tiny_graphrag import build_index, load_index
from tiny_graphrag.cli.commands import main
from tiny_graphrag.config import BuildConfig, ChunkingConfig, ExtractionConfig, LLMConfig
from tiny_graphrag.errors import ConfigError, IndexFormatError, InputError, OutputError
from tiny_graphrag.index.placement import MANIFEST
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.indexing.chunking import chunk_documents
from tiny_graphrag.indexing.documents import read_document
from tiny_graphrag.indexing.sync import plan
from tiny_graphrag.records import Document
from tiny_graphrag.search.engine import QueryEngine

TEXTS = {
    "a.txt": "Barack Obama was born in Honolulu, Hawaii. Obama studied at Columbia University and Harvard Law "
    "School. Michelle Obama grew up in Chicago, where Barack Obama taught law.\n",
    "b.txt": "Marie Curie was born in Warsaw, Poland. Marie Curie worked in Paris with Pierre Curie at the "
    "University of Paris. Pierre Curie was born in Paris.\n",
    "c.txt": "The Eiffel Tower stands in Paris, France. Gustave Eiffel designed the Eiffel Tower in Paris for the "
    "1889 World's Fair.\n",
}
CHUNKING = ChunkingConfig(max_tokens=24, overlap_tokens=0)
NO_REPORTS = BuildConfig(chunking=CHUNKING, extraction=ExtractionConfig(extractor="spacy"), reports=False)


def _with_reports(smollm_path: Path) -> BuildConfig:
    # Small report budgets: each report is a real SmolLM2 call, and communities of 1-2 entities get none.
    llm = LLMConfig(
        model=str(smollm_path), n_ctx=2048, max_report_tokens=160, report_context_tokens=500, report_min_size=3
    )
    return BuildConfig(chunking=CHUNKING, extraction=ExtractionConfig(extractor="spacy"), llm=llm)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("docs")
    for name, text in TEXTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _base(tmp_path_factory, docs: Path, config: BuildConfig) -> Path:
    """A folder holding an index of a.txt and b.txt (`idx`) and its call cache (`.idx.cache`)."""
    folder = tmp_path_factory.mktemp("base")
    build_index([docs / "a.txt", docs / "b.txt"], folder / "idx", config=config, progress=False)
    return folder


@pytest.fixture(scope="module")
def base_reports(tmp_path_factory, docs, smollm_path) -> Path:
    return _base(tmp_path_factory, docs, _with_reports(smollm_path))


@pytest.fixture(scope="module")
def base_plain(tmp_path_factory, docs) -> Path:
    return _base(tmp_path_factory, docs, NO_REPORTS)


def _copy(base: Path, tmp_path: Path) -> Path:
    shutil.copytree(base, tmp_path / "g")
    return tmp_path / "g" / "idx"


def _state(path: Path) -> dict:
    """Everything an index holds, as plain data (vectors compared separately)."""
    store = IndexStore.open(path)
    g = store.graph()
    state = {
        "documents": store.documents(),
        "chunks": store.chunks(),
        "sids": store.source_ids(),
        "nodes": dict(g.nodes(data=True)),
        "edges": {(u, v, k): d for u, v, k, d in g.edges(keys=True, data=True)},
        "graph": dict(g.graph),
        "communities": store.communities(),
        "reports": store.reports(),
        "vectors": {n: store.vectors(n) for n in ("chunks", "entities", "reports") if store.has_vectors(n)},
    }
    store.close()
    return state


def _assert_same_index(a: dict, b: dict) -> None:
    va, vb = a.pop("vectors"), b.pop("vectors")
    for key in a:
        assert a[key] == b[key], f"{key} differs from the fresh build"
    assert va.keys() == vb.keys()
    for name in va:  # a cached row was embedded in another batch: equal up to float rounding
        assert va[name][0] == vb[name][0]
        np.testing.assert_allclose(va[name][1], vb[name][1], atol=1e-5)


def test_add_then_remove_equals_a_fresh_build_and_unchanged_reports_cost_no_call(
    base_reports, docs, tmp_path, smollm_path
):
    out = _copy(base_reports, tmp_path)
    before = IndexStore.open(out)
    old_reports = {r.community_id: r for r in before.reports()}
    old_comms = {c.id for c in before.communities()}
    before.close()
    index = load_index(out)

    added = index.add(docs / "c.txt")
    calls, changes = added.summary.model_calls, added.summary.changes
    new_chunks = chunk_documents([read_document(docs / "c.txt")], CHUNKING)
    assert calls["extraction"] == len(new_chunks) and calls["extraction_cached"] == len(index.chunks()) - len(
        new_chunks
    )
    assert calls["embedding_cached"] > 0 and changes["documents"] == {"added": 1, "removed": 0}
    assert changes["chunks"] == {"added": len(new_chunks), "removed": 0}
    # A community none of whose members c.txt mentions is the same request: its report is the old one,
    # answered by the cache (the first build's call), not by the model.
    c_id = read_document(docs / "c.txt").id
    graph = index.graph()
    untouched = [
        c
        for c in index.communities()
        if c.id in old_reports and not any(p[0] == c_id for n in c.nodes for p in graph.nodes[n]["provenance"])
    ]
    assert untouched, "the test documents should leave a community with a report untouched"
    assert calls["llm_cached"] >= len(untouched)
    reports = {r.community_id: r for r in index.reports()}
    assert all(reports[c.id] == old_reports[c.id] for c in untouched)
    assert 0 < changes["reports"]["added"] <= len(reports) - len(untouched)  # only changed ones rewritten
    assert changes["communities"]["added"] > 0 and len(old_comms & {c.id for c in index.communities()}) > 0

    removed = index.remove(str(docs / "a.txt"))
    assert removed.summary.model_calls["extraction"] == 0 and removed.summary.model_calls["embedding"] == 0
    assert removed.summary.changes["documents"] == {"added": 0, "removed": 1}
    assert removed.summary.changes["entities"]["removed"] > 0  # Obama's entities had no other mention
    assert not any(
        p[0] == read_document(docs / "a.txt").id for _, d in index.graph().nodes(data=True) for p in d["provenance"]
    )

    fresh = build_index(
        [docs / "b.txt", docs / "c.txt"], tmp_path / "fresh" / "idx", config=_with_reports(smollm_path), progress=False
    )
    assert fresh.summary.model_calls["extraction_cached"] == 0 and fresh.summary.model_calls["llm_cached"] == 0
    assert fresh.summary.reports > 0
    _assert_same_index(_state(out), _state(fresh.path))
    index.close()


KILL_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from tiny_graphrag import load_index
    from tiny_graphrag.index.cache import CallCache

    put = CallCache.put
    def put_then_die(self, key, value):
        put(self, key, value)
        if isinstance(value, str):  # the first embedding stored: the new chunks' extraction is done
            os.kill(os.getpid(), signal.SIGKILL)
    CallCache.put = put_then_die
    load_index(sys.argv[1]).add(sys.argv[2])
    """
)


def _cached_embeddings(cache: Path) -> int:
    with sqlite3.connect(cache) as db:
        return db.execute("SELECT count(*) FROM calls WHERE value LIKE '\"%'").fetchone()[0]


def test_kill_9_mid_add_keeps_the_old_index_and_the_rerun_repeats_no_call(base_plain, docs, tmp_path):
    out = _copy(base_plain, tmp_path)
    cache = out.parent / ".idx.cache" / "calls.sqlite"  # the index's own cache folder (issue 28)
    manifest = (out / MANIFEST).read_bytes()
    embedded = _cached_embeddings(cache)
    script = tmp_path / "add.py"
    script.write_text(KILL_SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), str(out), str(docs / "c.txt")], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert list(out.parent.glob(".idx.building-*")), "the kill should leave its staging folder"
    assert (out / MANIFEST).read_bytes() == manifest
    old = IndexStore.open(out)  # loadable, every file's hash checked
    assert len(old.documents()) == 2
    old.close()
    after_kill = _cached_embeddings(cache)
    assert after_kill > embedded

    engine = QueryEngine(out)  # opened on the old version
    rerun = load_index(out).add(docs / "c.txt")
    calls = rerun.summary.model_calls
    assert calls["extraction"] == 0  # the killed run finished the extraction: nothing extracted twice
    assert calls["embedding"] == _cached_embeddings(cache) - after_kill  # each text embedded at most once
    assert rerun.summary.changes["documents"] == {"added": 1, "removed": 0}
    assert not list(out.parent.glob(".idx.building-*")) and not (out.parent / ".idx.lock").exists()
    # The engine opened before still answers from the old version; a new one sees the update.
    old_result = engine.naive_search("Where was Marie Curie born?", only_context=True)
    assert old_result.context and "Eiffel" not in old_result.context
    engine.close()
    with QueryEngine(out) as new_engine:
        assert "Eiffel" in new_engine.naive_search("Eiffel Tower", only_context=True).context


def test_a_second_writer_fails_with_a_clear_message(base_plain, docs, tmp_path):
    out = _copy(base_plain, tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom pathlib import Path\nfrom tiny_graphrag.index.placement import "
            "index_lock\nwith index_lock(Path(sys.argv[1])):\n    print('locked', flush=True)\n    time.sleep(120)",
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        manifest = (out / MANIFEST).read_bytes()
        with pytest.raises(OutputError, match="being built or updated by another process"):
            load_index(out).add(docs / "c.txt")
        assert (out / MANIFEST).read_bytes() == manifest
    finally:
        holder.kill()
        holder.wait()
    assert load_index(out).add(docs / "c.txt").summary.changes["documents"]["added"] == 1  # free again


def test_bad_updates_are_refused_and_change_nothing(base_plain, docs, tmp_path, caplog):
    out = _copy(base_plain, tmp_path)
    manifest = (out / MANIFEST).read_bytes()
    index = load_index(out)
    with pytest.raises(InputError, match=rf"'nope.txt' is not a document of the index .*info {out} --json` lists"):
        index.remove(["nope.txt"])  # `info` without --json lists no documents
    with caplog.at_level("INFO", logger="tiny_graphrag.indexing.update"):
        noop = index.add([docs / "a.txt"])
    assert "already indexed" in caplog.text and noop.summary.changes["documents"] == {"added": 0, "removed": 0}
    with pytest.raises(ConfigError, match=r"config\.chunking\.max_tokens: index has 24, given 32.*--force"):
        build_index(
            [docs / "c.txt"],
            out,
            config=BuildConfig(
                chunking=ChunkingConfig(max_tokens=32, overlap_tokens=0),
                extraction=ExtractionConfig(extractor="spacy"),
                reports=False,
            ),
            progress=False,
        )
    with pytest.raises(ConfigError, match="schema"):
        build_index([docs / "c.txt"], out, schema="biomedical", config=NO_REPORTS, progress=False)
    assert (out / MANIFEST).read_bytes() == manifest
    # A file inside the index would be replaced with it: add and sync both refuse it, and it stays.
    notes = out / "notes.md"
    notes.write_text("Our notes about Honolulu.", encoding="utf-8")
    for update in (index.add, index.sync):
        with pytest.raises(OutputError, match="inside"):
            update([notes])
        assert notes.read_text(encoding="utf-8") == "Our notes about Honolulu."
    assert (out / MANIFEST).read_bytes() == manifest
    index.close()


def test_an_older_format_is_refused_with_the_fix(base_plain, docs, tmp_path):
    import json

    out = _copy(base_plain, tmp_path)
    data = json.loads((out / MANIFEST).read_text())
    data["format_version"] = 1
    del data["settings"]
    (out / MANIFEST).write_text(json.dumps(data))
    with pytest.raises(IndexFormatError, match="format version 1.*can still be queried.*--force"):
        load_index(out).add(docs / "c.txt")


def test_a_newer_format_names_the_rebuild_that_replaces_it(base_plain, docs, tmp_path, capsys):
    import json

    out = _copy(base_plain, tmp_path)
    (out / MANIFEST).write_text(json.dumps({**json.loads((out / MANIFEST).read_text()), "format_version": 99}))
    assert main(["query", "naive", "Obama?", "--index", str(out), "--only-context"]) == 2
    assert f"rebuild it with `tiny-graphrag build FILE... --out {out} --force`" in capsys.readouterr().err
    build = ["build", str(docs / "c.txt"), "--out", str(out), "--extractor", "spacy", "--no-reports"]
    assert main(build) == 2  # without --force the build reads the index to update it: the same error
    assert main([*build, "--force"]) == 0  # as the message says
    assert load_index(out).manifest["format_version"] == 2


def test_an_index_this_user_cannot_write_is_not_told_to_use_add_s_missing_out(base_plain, docs, tmp_path, capsys):
    import os

    out, real_open = _copy(base_plain, tmp_path), os.open

    def no_lock(path, *args, **kwargs):  # as root, a chmod does not stop writes: refuse the lock file beside it
        if str(path).endswith(".idx.lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "open", no_lock)
        assert main(["add", str(docs / "c.txt"), "--index", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write the index {out} or beside it" in err and "Traceback" not in err
    assert "to add to or remove from this index, copy it to such a folder and update the copy" in err


def test_an_index_that_recorded_the_old_entity_threshold_setting_is_still_updated(base_plain, docs, tmp_path):
    """Up to 0.7.11 an index's settings held `config.extraction.entity_threshold` (0.5); the setting is now None (the
    model's recorded threshold) and the extractor describes the one it uses, so that key no longer blocks an update."""
    import json

    out = _copy(base_plain, tmp_path)
    data = json.loads((out / MANIFEST).read_text())
    assert "config.extraction.entity_threshold" not in data["settings"]
    data["settings"]["config.extraction.entity_threshold"] = 0.5
    (out / MANIFEST).write_text(json.dumps(data))
    result = build_index([docs / "c.txt"], out, config=NO_REPORTS, progress=False)
    assert result.summary.changes["documents"] == {"added": 1, "removed": 0}
    # a setting that still counts is still refused
    other = BuildConfig(chunking=ChunkingConfig(max_tokens=30, overlap_tokens=0), extraction=NO_REPORTS.extraction)
    with pytest.raises(ConfigError, match="chunking.max_tokens"):
        build_index([docs / "c.txt"], out, config=other, progress=False)


def test_build_over_an_index_syncs_changed_files_and_sync_removes_missing(base_plain, docs, tmp_path):
    out = _copy(base_plain, tmp_path)
    mine = tmp_path / "mine"
    shutil.copytree(docs, mine)
    build_index([mine / "a.txt", mine / "b.txt"], out, config=NO_REPORTS, progress=False, force=True)
    (mine / "b.txt").write_text(TEXTS["b.txt"] + "Pierre Curie died in Paris.\n", encoding="utf-8")
    # Same settings, b.txt changed: its old version is replaced, a.txt (not given) is kept.
    result = build_index([mine / "b.txt"], out, config=NO_REPORTS, progress=False)
    assert result.summary.changes["documents"] == {"added": 1, "removed": 1}
    sources = {Path(d.source).name: d.text for d in load_index(out).documents()}
    assert sorted(sources) == ["a.txt", "b.txt"] and "died" in sources["b.txt"]
    # The CLI: add, remove, and build --sync (which leaves exactly the inputs).
    assert main(["add", str(mine / "c.txt"), "--index", str(out)]) == 0
    assert main(["remove", str(mine / "a.txt"), "--index", str(out)]) == 0
    assert sorted(Path(d.source).name for d in load_index(out).documents()) == ["b.txt", "c.txt"]
    assert main(["remove", "a.txt", "--index", str(out)]) == 2
    flags = ["--extractor", "spacy", "--no-reports", "--max-tokens", "24", "--overlap", "0"]
    assert main(["build", str(mine / "c.txt"), "--out", str(out), "--sync", *flags]) == 0
    assert [Path(d.source).name for d in load_index(out).documents()] == ["c.txt"]


def test_plan_keeps_order_replaces_changed_files_and_skips_known():
    a, b, b2, c = (
        Document(i, t, s)
        for i, t, s in [("d-a", "A", "a.txt"), ("d-b", "B", "b.txt"), ("d-b2", "B2", "b.txt"), ("d-c", "C", "<text:0>")]
    )
    p = plan([a, b], [b2, c, a], sync=False)
    assert [d.id for d in p.documents] == ["d-a", "d-b2", "d-c"] and p.removed == ("d-b",)
    assert p.added == ("d-b2", "d-c") and p.already_indexed == ("a.txt",)
    assert [d.id for d in plan([a, b], [c], sync=True).documents] == ["d-c"]
    assert plan([a, c], [Document("d-x", "X", "<text:0>")], sync=False).removed == ()  # texts are never "changed"


def test_config_from_manifest_round_trips_every_section():
    """An update builds with the index's own config: every nested section comes back, a section
    the index predates gets its default."""
    import json
    from dataclasses import asdict

    from tiny_graphrag.config import BuildConfig, ChunkingConfig, CommunityConfig, TreeConfig
    from tiny_graphrag.indexing.update import config_from_manifest

    config = BuildConfig(
        chunking=ChunkingConfig(max_tokens=64, overlap_tokens=8),
        communities=CommunityConfig(max_cluster_size=7),
        tree=TreeConfig(enabled=True, seed=3),
    )
    stored = json.loads(json.dumps(asdict(config)))  # as the manifest holds it
    assert config_from_manifest({"config": stored}) == config
    del stored["tree"]
    assert config_from_manifest({"config": stored}).tree == TreeConfig()
