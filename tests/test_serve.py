"""`tiny-graphrag serve`: the JSON API in process (FastAPI's TestClient) and over real sockets
(uvicorn in a thread, and the CLI in a subprocess), with the real SmolLM2-135M model: the same
results as Python and the CLI, the look-ups, the safety cases and the bad input."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from unittest.mock import ANY

import httpx
import pytest
from _fakes import FakeLLM
from _serve_index import build_serve_index, serving
from fastapi.testclient import TestClient

import tiny_graphrag
from tiny_graphrag.cli.commands import main
from tiny_graphrag.outputs.info import index_info
from tiny_graphrag.search.engine import QueryEngine
from tiny_graphrag.serve.app import create_app
from tiny_graphrag.serve.indexes import ServedIndex, open_indexes
from tiny_graphrag.serve.queue import FairQueue

N_CTX = 2048
COMPARED = (
    "answer",
    "context",
    "sources",
    "notes",
    "invalid_citations",
    "documents",
    "context_tokens",
    "token_counter",
)


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    return build_serve_index(tmp_path_factory.mktemp("serve") / "idx")


@pytest.fixture(scope="module")
def served(index, smollm_path):
    return open_indexes([index], llm=str(smollm_path), n_ctx=N_CTX, models_dir=None)


@pytest.fixture(scope="module")
def client(served):
    return TestClient(create_app(served, hosts={"127.0.0.1"}), base_url="http://127.0.0.1")


@pytest.fixture(scope="module")
def engine(index, smollm_path):
    """What Python gives: the engine as the CLI opens it (`query --llm M --n-ctx N`)."""
    qe = QueryEngine(index)
    qe.change_llm_settings(model=str(smollm_path), n_ctx=N_CTX)
    return qe


def as_json(result) -> dict:
    return json.loads(json.dumps(result.to_dict(), ensure_ascii=False))


def events(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_answers_equal_python_whole_and_streamed(client, engine, no_network):
    question = "Who did Acme <Labs> meet?"
    got = client.post("/api/indexes/idx/query", json={"question": question, "mode": "local"}).json()
    expected = as_json(engine.local_search(question))
    assert {k: got[k] for k in COMPARED} == {k: expected[k] for k in COMPARED}
    assert got["llm_calls"] == 1 and got["usage"]["answer"]["llm_calls"] == 1  # its own counters

    question = "Where is New York?"
    reply = client.post("/api/indexes/idx/query", json={"question": question, "mode": "naive", "stream": True})
    assert reply.headers["content-type"].startswith("text/event-stream")
    stream = events(reply.text)
    kinds = [k for k, _ in stream]
    assert kinds[0] == "queue" and stream[kinds.index("token") - 1] == ("queue", {"position": 0})
    assert kinds.count("token") >= 2 and kinds[-1] == "result"  # piece by piece, then the whole result
    streamed = "".join(d["text"] for k, d in stream if k == "token")
    result = stream[-1][1]
    expected = as_json(engine.naive_search(question))
    assert {k: result[k] for k in COMPARED} == {k: expected[k] for k in COMPARED}
    # the pieces are the model's text; the answer is that text cleaned ("The Rock." -> "The Rock"), then cited
    assert streamed.strip().split("[Data:")[0].strip().rstrip(".") in result["answer"]


def test_only_context_and_lookups(client, engine, index, no_network):
    got = client.post("/api/indexes/idx/query", json={"question": "Acme <Labs>?", "only_context": True}).json()
    expected = as_json(engine.local_search("Acme <Labs>?", only_context=True))
    assert got["context"] == expected["context"] and got["sources"] == expected["sources"]
    assert got["answer"] == "" and got["llm_calls"] == 0 and got["usage"] == {}

    chunk = got["sources"]["chunks"][0]
    source = client.get(f"/api/indexes/idx/sources/{chunk['id']}").json()
    assert source["text"] == chunk["text"] and source["document"]["name"] == Path(chunk["source"]).name
    window = source["window"]
    assert window["text"][source["start"] - window["offset"] : source["end"] - window["offset"]] == chunk["text"]

    entity = client.get("/api/indexes/idx/entities", params={"name": "acme <labs>"}).json()
    assert entity["name"] == "Acme <Labs>" and entity["mentions"] and entity["relations"]
    assert client.get("/api/indexes/idx/entities", params={"id": entity["id"]}).json() == entity
    graph = client.get("/api/indexes/idx/graph", params={"ids": str(entity["id"])}).json()
    neighbours = {r["to"] for r in entity["relations"]} | {r["from"] for r in entity["relations"]}
    assert {n["id"] for n in graph["nodes"]} == neighbours | {entity["id"]}
    # edges in the nodes' order (they came in the hash order of a set: another order per process)
    position = {n["id"]: i for i, n in enumerate(graph["nodes"])}
    keys = [(position[e["from"]], position[e["to"]], e["label"]) for e in graph["edges"]]
    assert graph["edges"] and keys == sorted(keys)
    by_source = client.get("/api/indexes/idx/graph", params={"sources": str(entity["mentions"][0]["source"])}).json()
    assert entity["id"] in {n["id"] for n in by_source["nodes"] if n["seed"]}

    communities = client.get("/api/indexes/idx/communities").json()
    assert communities and entity["communities"][0]["id"] in {c["id"] for c in communities}
    report = client.get(f"/api/indexes/idx/communities/{communities[0]['id']}").json()
    assert report["report"]["title"] == communities[0]["title"] and report["entities"]
    info = client.get("/api/indexes/idx").json()
    assert info["counts"] == index_info(index)["counts"] and info["answering"] is None
    spec = client.get("/openapi.json").json()
    assert "/api/indexes/{name}/query" in spec["paths"] and "QueryRequest" in spec["components"]["schemas"]
    assert client.get("/docs").status_code == 404  # its page would load scripts from a CDN
    body = {"question": "What is Acme?", "mode": "global", "only_context": True, "level": 0}
    got = client.post("/api/indexes/idx/query", json=body)
    assert got.status_code == 200 and got.json()["mode"] == "global"  # level accepted for global search


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "says"),
    [
        ("post", "/api/indexes/nope/query", {"question": "x"}, 404, "no index 'nope'"),
        ("post", "/api/indexes/idx/query", {"question": "x", "mode": "fancy"}, 422, "mode"),
        ("post", "/api/indexes/idx/query", {"question": "x", "level": 1}, 422, "only for global"),
        ("post", "/api/indexes/idx/query", {"question": "x", "mode": "global", "level": 7}, 400, "not exist in 'idx'"),
        ("post", "/api/indexes/idx/query", {"question": "x", "over": "tree"}, 422, "only for global"),
        ("post", "/api/indexes/idx/query", {"question": "x", "mode": "global", "selection": "level"}, 422, "selection"),
        ("post", "/api/indexes/idx/query", {"question": "x", "mode": "tree"}, 400, "'idx' was built without a RAPTOR"),
        ("post", "/api/indexes/idx/query", {"question": "   "}, 400, "empty"),
        ("post", "/api/indexes/idx/query", {"question": "x" * 2001}, 422, "question"),
        ("post", "/api/indexes/idx/query", {"question": "x", "temperature": 2}, 422, "temperature"),
        ("post", "/api/indexes/idx/query", {"question": "x" * 17000}, 413, "bytes"),
        ("get", "/api/indexes/idx/sources/999999999", None, 404, "no source 999999999"),
        ("get", "/api/indexes/idx/sources/99999999999999999999", None, 404, "no source 99999999999999999999 in"),
        ("get", "/api/indexes/idx/sources/..%2F..%2Fmanifest.json", None, 404, "Not Found"),
        ("get", "/api/indexes/idx/sources/manifest.json", None, 422, "sid"),
        ("get", "/api/indexes/idx/sources/%2Fetc%2Fpasswd", None, 404, "Not Found"),
        ("get", "/api/indexes/idx/entities?name=Acme%20Lab", None, 404, "close names: ['Acme <Labs>']"),
        ("get", "/api/indexes/idx/entities?id=-5", None, 404, "no entity with id -5"),
        ("get", "/api/indexes/idx/graph?ids=1;DROP", None, 422, "comma-separated"),
        ("get", "/api/indexes/idx/communities/com-nope", None, 404, "no community 'com-nope'"),
        ("get", "/static/..%2F..%2Fcli%2Fcommands.py", None, 404, "Not Found"),
        ("get", "/static/page.html.bak", None, 404, "no file"),
    ],
)
def test_bad_requests_get_json_errors_naming_the_problem(client, index, caplog, method, path, body, status, says):
    with caplog.at_level(logging.INFO):
        reply = getattr(client, method)(path, **({"json": body} if body is not None else {}))
    assert reply.status_code == status and says in reply.json()["error"], reply.text
    assert "Traceback" not in reply.text and not any(r.exc_info for r in caplog.records)
    assert str(index) not in reply.text  # the index by its name, never the server's folder


def chunked(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    """`total` bytes of a body in HTTP chunks, then the last (empty) chunk."""
    for start in range(0, total, size):
        n = min(size, total - start)
        yield b"%x\r\n" % n + b"x" * n + b"\r\n"
    yield b"0\r\n\r\n"


def raw_post(url: str, headers: str, body: Iterable[bytes]) -> tuple[int, bytes, int]:
    """POSTs a query with `headers` as written (however they conflict), sending the body piece by
    piece until the server replies: its status, its reply, and the bytes it let in before replying."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(
            f"POST /api/indexes/idx/query HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{headers}\r\n\r\n".encode()
        )
        sent = 0
        for piece in body:
            if select.select([sock], [], [], 0)[0]:
                break  # it replied: it reads no more
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(piece)
        reply = b""
        with contextlib.suppress(ConnectionResetError):  # a reset after the reply: the unread body was dropped
            while piece := sock.recv(65536):
                reply += piece
    return int(reply.split()[1]), reply, sent


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ("Content-Length: 4\r\nTransfer-Encoding: chunked", chunked(5_000_000)),
        ("Transfer-Encoding: chunked", chunked(60_000_000)),
        ("Content-Length: 60000000", (b"x" * 1_000_000 for _ in range(60))),
    ],
)
def test_body_limit_holds_whatever_the_headers_say(served, headers, body):
    with serving(create_app(served)) as url:
        status, reply, sent = raw_post(url, headers, body)
    assert status == 413 and b"over 16384 bytes" in reply, reply[:300]
    assert b"connection: close" in reply.lower()  # the rest of the body is never read
    assert sent < 10_000_000  # refused once past the limit, not after reading it all (socket buffers hold the rest)


def test_a_chunked_body_within_the_limit_is_read(served):
    question = json.dumps({"question": "Who is Acme <Labs>?", "only_context": True}).encode()
    with serving(create_app(served)) as url:
        status, reply, _ = raw_post(
            url, "Transfer-Encoding: chunked", [b"%x\r\n%s\r\n0\r\n\r\n" % (len(question), question)]
        )
    assert status == 200 and b'"context":"[' in reply, reply  # the evidence, "[1] Title: ..."


def test_a_bug_is_answered_in_json_not_plain_text(served, monkeypatch):
    def broken(self, sid):
        raise RuntimeError("a bug")

    monkeypatch.setattr(ServedIndex, "source", broken)
    reply = TestClient(create_app(served), raise_server_exceptions=False).get("/api/indexes/idx/sources/1")
    assert reply.status_code == 500 and reply.json() == {"error": "an internal error (see the server's log)"}


def test_token_host_and_headers(served):
    guarded = TestClient(create_app(served, token="s3cret-t0ken", hosts={"127.0.0.1"}), base_url="http://127.0.0.1")
    assert guarded.get("/api/indexes").status_code == 401
    assert guarded.get("/api/indexes", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert guarded.get("/openapi.json").status_code == 401
    ok = guarded.get("/api/indexes", headers={"Authorization": "Bearer s3cret-t0ken"})
    assert ok.status_code == 200 and ok.json()[0]["name"] == "idx"
    page = guarded.get("/")  # the page's own files hold no data: it loads, then asks for the token
    assert page.status_code == 200 and "token" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for name in ("page.js", "page.css"):
        text = guarded.get(f"/static/{name}").text
        assert "http://" not in text and "https://" not in text and "innerHTML" not in text
    # the graph library too: the page loads it with <script src>, which cannot send the token
    assert guarded.get("/static/vis-network.min.js").status_code == 200
    rebinding = guarded.get("/api/indexes", headers={"Host": "evil.example:8000"})
    assert rebinding.status_code == 421 and "127.0.0.1" in rebinding.json()["error"]


def test_without_a_model_it_serves_all_but_answers(index, tmp_path, caplog):
    empty = tmp_path / "models"
    empty.mkdir()
    with caplog.at_level(logging.WARNING):
        served = open_indexes([index], llm=None, n_ctx=None, models_dir=str(empty))
    assert f"{empty}" in caplog.text and "models download" in caplog.text  # the operator's log: where and how
    c = TestClient(create_app(served))
    listed = c.get("/api/indexes")
    assert "--llm" in listed.json()[0]["answering"] and "only_context" in listed.json()[0]["answering"]
    refused = c.post("/api/indexes/idx/query", json={"question": "Who is Acme <Labs>?"})
    assert refused.status_code == 503 and "--llm" in refused.json()["error"]
    context = c.post("/api/indexes/idx/query", json={"question": "Who is Acme <Labs>?", "only_context": True})
    assert context.status_code == 200 and "approximate" in " ".join(context.json()["notes"])
    sid = context.json()["sources"]["chunks"][0]["id"]
    assert c.get(f"/api/indexes/idx/sources/{sid}").status_code == 200
    info = c.get("/api/indexes/idx")
    assert info.json()["models"]["embedder"] == {"name": "all-MiniLM-L6-v2", "fingerprint": ANY}
    # the server's folders (index, models, the embedder's) are the operator's, shown to no client
    embedder = index_info(index)["models"]["embedder"]["path"]
    for reply in (listed, refused, info):
        assert str(index) not in reply.text and str(empty) not in reply.text and embedder not in reply.text


def test_fair_queue_positions_and_leaving():
    async def scenario() -> list:
        line = FairQueue()
        a, b, c = line.join(), line.join(), line.join()
        seen = [(a.position, b.position, c.position)]
        line.leave(b)  # gone while waiting: those behind move up
        seen.append((a.position, c.position))
        line.leave(a)
        seen.append((c.position, line.running is c, line.served))
        await c.moved(0.01)  # told that it moved
        return seen

    assert asyncio.run(scenario()) == [(0, 1, 2), (0, 1), (0, True, 2)]


class GatedLLM(FakeLLM):
    """Generates only once its gate is open: holds the model so others have to queue."""

    def __init__(self) -> None:
        super().__init__(lambda messages, schema, n: "They met at O'Hare.")
        self.gate = threading.Event()

    def _complete(self, *a, **k):
        self.gate.wait(60)
        return super()._complete(*a, **k)


def _stream(url: str, question: str, out: list, *, close_after_queue: bool = False) -> None:
    with httpx.stream("POST", f"{url}/api/indexes/idx/query", json={"question": question, "stream": True}) as r:
        for line in r.iter_lines():
            if line.startswith("data: "):
                out.append(json.loads(line[6:]))
                if close_after_queue and "position" in out[-1]:
                    return  # the client goes away while it waits


def _wait_for(url: str, **state) -> None:
    for _ in range(2000):  # a bound on the loop, not a timed assertion
        now = httpx.get(f"{url}/api/status").json()
        if all(now[k] == v for k, v in state.items()):
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"the server never reached {state}: {now}")


def test_one_generation_at_a_time_over_a_socket(index):
    llm = GatedLLM()
    app = create_app({"idx": ServedIndex("idx", QueryEngine(index, llm=llm), None)}, time_limit=600)
    with serving(app) as url:
        first, gone, third = [], [], []
        a = threading.Thread(target=_stream, args=(url, "Where did the couple meet?", first))
        a.start()
        _wait_for(url, generating=True, waiting=0)
        _stream(url, "Where did they meet?", gone, close_after_queue=True)
        assert gone == [{"position": 1}]  # one ahead: the request generating
        _wait_for(url, waiting=0)  # its place is freed once its connection closed
        c = threading.Thread(target=_stream, args=(url, "Who met whom?", third))
        c.start()
        _wait_for(url, waiting=1)
        llm.gate.set()
        a.join(30), c.join(30)
        assert first[-1]["answer"].startswith("They met at O'Hare") and third[-1]["mode"] == "local"
        assert {"position": 1} in third and httpx.get(f"{url}/api/status").json()["turns"] == 2


def test_time_limit_in_line_and_while_generating(index):
    llm = GatedLLM()
    app = create_app({"idx": ServedIndex("idx", QueryEngine(index, llm=llm), None)}, time_limit=1)
    with serving(app) as url:
        first = []
        a = threading.Thread(target=_stream, args=(url, "Where did the couple meet?", first))
        a.start()
        _wait_for(url, generating=True)
        late = httpx.post(f"{url}/api/indexes/idx/query", json={"question": "And then?"}, timeout=60)
        assert late.status_code == 503 and "time limit" in late.json()["error"]
        llm.gate.set()
        a.join(30)
        assert "took over the time limit" in first[-1]["error"]
        assert httpx.get(f"{url}/api/status").json() == {"generating": False, "waiting": 0, "turns": 1}


def _cli_env() -> dict:
    src = str(Path(tiny_graphrag.__file__).parents[1])
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}


def test_cli_serve_answers_as_the_cli_query(index, smollm_path):
    question = "Where is New York?"
    cmd = [sys.executable, "-m", "tiny_graphrag.cli"]
    settings = ["--llm", str(smollm_path), "--n-ctx", str(N_CTX)]
    server = subprocess.Popen(
        [*cmd, "serve", str(index), "--port", "0", *settings], stdout=subprocess.PIPE, text=True, env=_cli_env()
    )
    try:
        line = server.stdout.readline()
        assert line.startswith("serving idx at http://127.0.0.1:"), line
        url = line.split(" at ")[1].split()[0]
        got = httpx.post(f"{url}api/indexes/idx/query", json={"question": question}, timeout=120).json()
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(30) == 0
    query = subprocess.run(
        [*cmd, "query", "local", question, "--index", str(index), *settings, "--json"],
        capture_output=True,
        text=True,
        env=_cli_env(),
        check=True,
    )
    expected = json.loads(query.stdout)
    assert {k: got[k] for k in COMPARED} == {k: expected[k] for k in COMPARED}


def test_cli_bad_input_before_the_server_starts(index, tmp_path, capsys):
    def error(argv: list[str]) -> str:
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert "serving" not in out
        return err

    missing = tmp_path / "no-index"
    assert error(["serve", str(missing), "--port", "0"]) == error(["info", str(missing)])  # the CLI's own error
    damaged = tmp_path / "damaged"
    shutil.copytree(index, damaged)
    (damaged / "manifest.json").write_text("{not json")
    assert error(["serve", str(damaged), "--port", "0"]) == error(["info", str(damaged)])
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        err = error(["serve", str(index), "--port", str(port)])
        assert f"port {port}" in err and "--port" in err
    err = error(["serve", str(index), "--host", "0.0.0.0", "--port", "0"])
    assert "--token" in err and "0.0.0.0" in err
    assert "two indexes are named 'idx'" in error(["serve", str(index), str(index), "--port", "0"])
