"""kill -9 during the tree stage, then the same build again: it completes, repeats no finished
summary call (the call cache), and builds the same tree as an uninterrupted build."""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_resume import _kill_after_calls, _run  # kill -9 a build mid-stage; one build in a subprocess

from tiny_graphrag import load_index

TESTS = Path(__file__).resolve().parent

SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from _fakes import KeywordExtractor, SlowLLM
    from tiny_graphrag import build_index
    from tiny_graphrag.index.cache import CallCache
    from tiny_graphrag.config import BuildConfig, TreeConfig

    text = open({obama!r}, encoding="utf-8").read()[:30000]
    out, cache, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
    llm = SlowLLM(delay, lambda m, s, n: "Summary: " + m[-1]["content"][70:200].strip() + ".", cache=CallCache(cache))
    build_index([text], out, schema="general", config=BuildConfig(reports=False, tree=TreeConfig(enabled=True)),
                extractor=KeywordExtractor(), llm=llm, progress=False)
    print("LLM_CALLS", llm.calls, "HITS", llm.cache_hits)
    """
).format(tests=str(TESTS), obama=str(TESTS.parent.parent / "shared" / "data" / "corpora" / "barack_obama.txt"))


def _tree(path: Path):
    store = load_index(path)
    return [(n.id, n.layer, n.children, n.chunks, n.text) for n in store.tree()], store.vectors("tree")[0]


def test_kill_during_tree_then_rerun_repeats_no_call_and_builds_the_same_tree(tmp_path):
    script = tmp_path / "build.py"
    script.write_text(SCRIPT)
    reference = tmp_path / "ref" / "idx"
    total = int(_run(script, reference, tmp_path / "ref-cache.sqlite", 0.0).split()[1])
    assert total >= 4

    out, cache = tmp_path / "graphs" / "idx", tmp_path / "cache.sqlite"
    done = _kill_after_calls(script, out, cache, 1.0, 2, timeout=300)
    assert 2 <= done < total, "the kill should land during the tree stage"
    assert not out.exists()  # nothing published

    words = _run(script, out, cache, 0.0).split()
    calls, hits = int(words[1]), int(words[3])
    assert hits >= done and calls == total - hits  # no finished summary was asked again
    assert _tree(out) == _tree(reference)
