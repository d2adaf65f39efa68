"""The command line, end to end on the real spaCy en_core_web_sm and all-MiniLM-L6-v2, offline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEXT = (
    "Barack Obama was born in Honolulu, Hawaii. Obama studied at Columbia University and Harvard Law School.\n\n"
    "Michelle Robinson grew up in Chicago. Barack Obama and Michelle Robinson married in Chicago in 1992.\n\n"
    "President Obama worked with Joe Biden in Washington. Biden later led the Democratic Party.\n"
)

# Runs the CLI with every way of opening a network connection replaced by one that records the
# attempt and fails: a build must never try.
GUARD = textwrap.dedent(
    """
    import socket, sys, json
    attempts = []
    def refuse(*a, **k):
        attempts.append(repr(a)[:200])
        raise OSError("network access attempted during an offline build")
    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    from tiny_graphrag.cli.commands import main
    code = main(sys.argv[1:])
    open(sys.argv[1 + sys.argv[1:].index("--out") + 1] + ".attempts.json", "w").write(json.dumps(attempts))
    sys.exit(code)
    """
)


def _cli(*args, cwd, env=None, check=True):
    proc = subprocess.run(
        [sys.executable, "-m", "tiny_graphrag.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A spaCy-extractor index built through the CLI with sockets refused (no reports: no LLM)."""
    work = tmp_path_factory.mktemp("cli")
    (work / "doc.txt").write_text(TEXT, encoding="utf-8")
    script = work / "guarded.py"
    script.write_text(GUARD)
    cmd = [
        sys.executable,
        str(script),
        "build",
        "doc.txt",
        "--out",
        "graphs/doc",
        "--extractor",
        "spacy",
        "--no-reports",
        "--json",
    ]
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"]).returncode == 0:
        cmd = ["unshare", "-n", *cmd]  # and with no network interface at all, where allowed
    proc = subprocess.run(
        cmd,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0"},
    )
    assert proc.returncode == 0, proc.stderr
    return work, json.loads(proc.stdout)


def test_build_opens_no_socket(built):
    work, summary = built
    assert json.loads((work / "graphs" / "doc.attempts.json").read_text()) == []
    assert summary["documents"] == 1 and summary["chunks"] >= 1


def test_build_graph_is_typed_directed_and_grounded(built):
    from tiny_graphrag import load_index

    work, summary = built
    store = load_index(work / "graphs" / "doc")
    graph = store.graph()
    doc = store.documents()[0]
    assert summary["entities_per_type"].get("Person", 0) >= 2
    types = {d["type"] for _, d in graph.nodes(data=True)}
    assert {"Person", "Location"} <= types
    assert "obama" not in graph or graph.nodes["obama"]["type"] == "Person"
    for _, data in graph.nodes(data=True):
        for doc_id, chunk_id, start, end in data["provenance"]:
            assert doc.text[start:end].lower().replace("’s", "").strip()  # real text spans
            assert store.chunk(chunk_id).doc_id == doc_id
    assert graph.number_of_edges() > 0
    for u, v, k, data in graph.edges(keys=True, data=True):
        assert data["label"] == k == "related to" and data["weight"] >= 1
        for doc_id, chunk_id, start, end in data["provenance"]:
            span = doc.text[start:end].lower()
            assert graph.nodes[u]["name"].lower().split()[-1] in span or any(
                a.lower() in span for a in graph.nodes[u]["aliases"]
            )


def test_alias_merges_recorded(built):
    from tiny_graphrag import load_index

    work, _ = built
    graph = load_index(work / "graphs" / "doc").graph()
    merged = {m["alias"]: m["canonical"] for m in graph.graph["merges"]}
    # "Obama" (and "President Obama") fold into the one longer Person name, "Barack Obama"
    assert merged.get("obama") == "barack obama"
    assert "obama" not in graph.nodes and graph.nodes["barack obama"]["type"] == "Person"
    assert "Obama" in graph.nodes["barack obama"]["aliases"]


def test_info_json_and_text(built):
    work, _ = built
    info = json.loads(_cli("info", "graphs/doc", "--json", cwd=work).stdout)
    assert info["counts"]["documents"] == 1 and info["entities_per_type"]
    text = _cli("info", "graphs/doc", cwd=work).stdout
    assert "documents: 1" in text and "level C0" in text


def test_missing_gliner_model_fails_clearly(tmp_path):
    (tmp_path / "doc.txt").write_text(TEXT, encoding="utf-8")
    proc = _cli(
        "build", "doc.txt", "--out", "graphs/x", "--models-dir", str(tmp_path / "models"), cwd=tmp_path, check=False
    )
    assert proc.returncode == 2
    assert "gliner_mediumv2.1" in proc.stderr and "models download" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "graphs" / "x").exists()


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda d: (d / "doc.txt").write_bytes(b"\x00\x01binary"), "binary"),
        (lambda d: (d / "doc.txt").write_bytes("caf\xe9".encode("latin-1")), "not valid UTF-8"),
        (lambda d: (d / "doc.txt").write_text(""), "empty"),
        (
            lambda d: (d / "schema.toml").write_text(
                'entity_types = ["A"]\n[relation_types.r]\nallowed_head = ["B"]\n'
            ),
            "not declared entity types",
        ),
    ],
)
def test_bad_input_exit_code_and_message(tmp_path, setup, message):
    (tmp_path / "doc.txt").write_text(TEXT, encoding="utf-8")
    setup(tmp_path)
    args = ["build", "doc.txt", "--out", "graphs/x", "--extractor", "spacy", "--no-reports"]
    if (tmp_path / "schema.toml").exists():
        args += ["--schema", "schema.toml"]
    proc = _cli(*args, cwd=tmp_path, check=False)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "graphs" / "x").exists()


def test_import_is_light():
    code = "import sys, tiny_graphrag; print(sorted(m for m in ('torch','spacy','gliner','llama_cpp','sentence_transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_query_naive_json_sources_resolve_to_text(built, smollm_path):
    from tiny_graphrag import load_index

    work, _ = built
    out = json.loads(
        _cli(
            "query",
            "naive",
            "Where was Obama born?",
            "--index",
            "graphs/doc",
            "--llm",
            str(smollm_path),
            "--json",
            cwd=work,
        ).stdout
    )
    assert out["answer"] and out["llm_calls"] == 1
    assert out["prompt_tokens"] > 0
    store = load_index(work / "graphs" / "doc")
    doc = store.documents()[0]
    assert out["sources"]["chunks"]
    for c in out["sources"]["chunks"]:
        assert doc.text[c["start"] : c["end"]] == c["text"] == store.chunk(c["chunk_id"]).text


def test_query_context_tokens_caps_the_data_text_first(built):
    from tiny_graphrag.search.tokens import approximate_tokens

    work, _ = built
    # GraphRAG's context (a large reader's): tables filling the budget
    args = ("query", "local", "Where was Obama born?", "--index", "graphs/doc", "--only-context", "--reader", "large")
    full = _cli(*args, cwd=work).stdout.split("----- context -----", 1)[1]
    capped = _cli(*args, "--context-tokens", "64", cwd=work).stdout.split("----- context -----", 1)[1]
    # No model is loaded, so budgets are counted with the stated over-estimate.
    assert approximate_tokens(capped.strip()) <= 64 < approximate_tokens(full.strip())
    assert full.strip().startswith("-----Sources-----")  # the text first, the graph tables after
    proc = _cli(*args, "--context-tokens", "10", cwd=work, check=False)
    assert proc.returncode == 2 and "--context-tokens" in proc.stderr
    # More than the window holds: cut, and the note says so (also with --only-context).
    proc = _cli(*args, "--context-tokens", "3000", "--n-ctx", "1024", cwd=work)
    assert "note: the data in the answer prompt was cut to" in proc.stderr and "n_ctx=1024" in proc.stderr


def test_query_only_context_and_errors(built):
    work, _ = built
    ctx = _cli("query", "local", "Barack Obama", "--index", "graphs/doc", "--only-context", cwd=work).stdout
    assert "----- context -----" in ctx and "Obama" in ctx
    proc = _cli("query", "global", "themes?", "--index", "graphs/doc", "--only-context", cwd=work, check=False)
    assert proc.returncode == 2 and "report" in proc.stderr.lower()  # built with --no-reports
    proc = _cli("query", "naive", "   ", "--index", "graphs/doc", "--only-context", cwd=work, check=False)
    assert proc.returncode == 2 and "empty" in proc.stderr.lower()
    proc = _cli("query", "naive", "q", "--index", "graphs/missing", cwd=work, check=False)
    assert proc.returncode == 2 and "no index at" in proc.stderr
