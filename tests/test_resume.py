"""kill -9 during report generation, then the same build again: it completes, redoes no finished
model call, and matches an uninterrupted build."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tiny_graphrag import load_index

TESTS = Path(__file__).resolve().parent

SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {tests!r})
    from _fakes import KeywordExtractor
    from tiny_graphrag import build_index
    from tiny_graphrag.index.cache import CallCache
    from tiny_graphrag.config import BuildConfig, ChunkingConfig, CommunityConfig
    from _fakes import FakeLLM

    class SlowLLM(FakeLLM):
        def _complete(self, *a, **k):
            time.sleep(float(sys.argv[3]))
            return super()._complete(*a, **k)

    texts = [f"Obama met Michelle{{s}} in Chicago{{s}}. Harvard{{s}} is in Hawaii{{s}}. Obama went to Columbia{{s}}."
             for s in "abcdef"]
    out, cache = sys.argv[1], sys.argv[2]
    llm = SlowLLM(cache=CallCache(cache))
    cfg = BuildConfig(chunking=ChunkingConfig(max_tokens=40, overlap_tokens=0), communities=CommunityConfig(max_cluster_size=3))
    r = build_index(texts, out, schema={{"entity_types": ["Person", "Organization", "Location"],
                    "relation_types": ["related to"]}}, config=cfg, extractor=KeywordExtractor(), llm=llm, progress=False)
    print("LLM_CALLS", llm.calls, "HITS", llm.cache_hits)
    """
).format(tests=str(TESTS))


def _llm_entries(cache: Path) -> int:
    if not cache.exists():
        return 0
    try:
        with sqlite3.connect(cache) as db:
            return db.execute("SELECT count(*) FROM calls WHERE value LIKE '%finish_reason%'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _run(script: Path, out: Path, cache: Path, delay: float) -> str:
    proc = subprocess.run(
        [sys.executable, str(script), str(out), str(cache), str(delay)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _kill_after_calls(script: Path, out: Path, cache: Path, delay: float, calls: int, timeout: float) -> int:
    """Start a build with `delay` seconds per model call, kill -9 it once `calls` calls are
    cached (or at `timeout`); the cached calls at the kill."""
    proc = subprocess.Popen(
        [sys.executable, str(script), str(out), str(cache), str(delay)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.time() + timeout
    while _llm_entries(cache) < calls and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return _llm_entries(cache)


def _snapshot(path: Path):
    store = load_index(path)
    g = store.graph()
    return (
        sorted((n, d["type"], d["mentions"]) for n, d in g.nodes(data=True)),
        sorted((u, v, k, d["weight"]) for u, v, k, d in g.edges(keys=True, data=True)),
        [(c.id, c.level, c.nodes, c.parent) for c in store.communities()],
        sorted((r.community_id, r.title, r.summary, r.findings) for r in store.reports()),
    )


def test_kill_during_reports_then_rerun_matches_uninterrupted(tmp_path):
    script = tmp_path / "build.py"
    script.write_text(SCRIPT)
    reference = tmp_path / "ref" / "idx"
    out_ref = _run(script, reference, tmp_path / "ref-cache.sqlite", 0.0)
    total = int(out_ref.split()[1])
    assert total >= 4, out_ref

    out, cache = tmp_path / "graphs" / "idx", tmp_path / "cache.sqlite"
    done = _kill_after_calls(script, out, cache, 0.4, 2, timeout=120)
    assert 2 <= done < total, "the kill should land during report generation"
    assert not out.exists()  # nothing published

    stdout = _run(script, out, cache, 0.0)
    calls, hits = int(stdout.split()[1]), int(stdout.split()[3])
    assert hits >= done and calls == total - hits  # finished calls were not redone
    assert _snapshot(out) == _snapshot(reference)
    assert not list(out.parent.glob(".idx.building-*"))  # the killed build's leftovers are gone
