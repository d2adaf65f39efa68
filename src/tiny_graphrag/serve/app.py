"""The HTTP API and the web page over served indexes (FastAPI; `create_app`).

A query retrieves at once (retrieval runs alongside another request's generation), then waits its turn for the model in
the fair line (queue.py) and streams the answer as server-sent events: `queue` (its position), `token` (answer text as
the model writes it), then `result` (the whole SearchResult, as `SearchResult.to_dict()` gives it in Python) or `error`.
Global search calls the model for its map step, so all of it runs in its turn. A client that goes away, or a request
past its time limit, leaves the line and stops its generation.

Errors are JSON `{"error": message}` with a 4xx status naming the problem; the OpenAPI description is at /openapi.json
(the interactive /docs page would load its scripts from a CDN, so it is off)."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Generator
from dataclasses import replace
from importlib import resources
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from tiny_graphrag.errors import TinyGraphRAGError
from tiny_graphrag.outputs.view import vis_network_script
from tiny_graphrag.search.global_search import map_plan
from tiny_graphrag.search.result import SearchResult, StreamingResult
from tiny_graphrag.serve.guard import Guard
from tiny_graphrag.serve.indexes import NotFound, ServedIndex
from tiny_graphrag.serve.queue import FairQueue

log = logging.getLogger(__name__)

MAX_QUESTION = 2000  # characters
TICK = 0.5  # seconds between looks at a waiting client and the clock
STATIC = {"page.js": "text/javascript", "page.css": "text/css", "vis-network.min.js": "text/javascript"}


class QueryRequest(BaseModel):
    """A question and the main options of `tiny-graphrag query`."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=MAX_QUESTION)
    mode: Literal["local", "global", "naive", "tree"] = "local"
    level: int | None = Field(
        None, ge=0, description="global search: the deepest level to select the reports nearest the question from"
    )
    over: Literal["reports", "tree"] | None = Field(None, description="global search: map reports or tree summaries")
    strategy: Literal["collapsed", "traversal"] | None = Field(None, description="tree search")
    context_tokens: int | None = Field(None, ge=64, le=1_000_000, description="at most this many tokens of data")
    only_context: bool = Field(False, description="build the context without calling the model")
    stream: bool = Field(False, description="server-sent events: queue, token..., then result (or error)")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def create_app(
    indexes: dict[str, ServedIndex],
    *,
    token: str | None = None,
    hosts: set[str] | None = None,
    time_limit: float = 300.0,
) -> FastAPI:
    """The app over `indexes` (by name). `token`: every request but the page's own files must
    carry `Authorization: Bearer <token>`; `hosts`: the only Host names answered (None: any)."""
    app = FastAPI(title="tiny-graphrag", docs_url=None, redoc_url=None, swagger_ui_oauth2_redirect_url=None)
    # The page's own files hold no data, and a <script src> cannot send the token: they need none.
    app.add_middleware(Guard, token=token, hosts=hosts, public={"/", *(f"/static/{name}" for name in STATIC)})
    line = FairQueue()

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:])) or 'body'}: {e['msg']}" for e in exc.errors())
        return _error(422, problems)

    @app.exception_handler(StarletteHTTPException)  # ours, and the router's own (no such path: 404)
    @app.exception_handler(NotFound)
    @app.exception_handler(TinyGraphRAGError)
    async def refused(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, StarletteHTTPException):
            return _error(exc.status_code, str(exc.detail))
        if isinstance(exc, TinyGraphRAGError):
            return _error(400, _for_client(indexes.get(request.path_params.get("name", "")), exc))
        return _error(404, str(exc))

    @app.exception_handler(Exception)  # a bug: its traceback goes to the log (uvicorn writes it), not to clients
    async def failed(request: Request, exc: Exception) -> JSONResponse:
        return _error(500, "an internal error (see the server's log)")

    def served(name: str) -> ServedIndex:
        if name not in indexes:
            raise NotFound(f"no index '{name}' is served here; served: {', '.join(indexes)}")
        return indexes[name]

    @app.get("/", include_in_schema=False)
    def page() -> Response:
        return Response(_package_text("page.html"), media_type="text/html")

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in STATIC:
            raise NotFound(f"no file '{name}'")
        text = vis_network_script("The web page's graph panel") if name.startswith("vis") else _package_text(name)
        return Response(text, media_type=STATIC[name])

    @app.get("/api/indexes", summary="the served indexes")
    def list_indexes() -> list[dict]:
        return [{"name": n, "answering": s.answering, "counts": s.info["counts"]} for n, s in indexes.items()]

    @app.get("/api/status", summary="the model's line: generating now, waiting")
    def status() -> dict:
        return {"generating": line.running is not None, "waiting": len(line.waiting), "turns": line.served}

    @app.get("/api/indexes/{name}", summary="index info (as `tiny-graphrag info --json`)")
    def info(name: str) -> dict:
        s = served(name)
        return {**s.info, "index": name, "answering": s.answering}

    @app.get("/api/indexes/{name}/sources/{sid}", summary="a cited text chunk in its document")
    def source(name: str, sid: int) -> dict:
        return served(name).source(sid)

    @app.get("/api/indexes/{name}/entities", summary="an entity by name or id, with its relations")
    def entity(
        name: str, entity: str | None = Query(None, alias="name", max_length=500), id: int | None = None
    ) -> dict:
        s = served(name)
        return s.entity(s.entity_key(entity, id))

    @app.get("/api/indexes/{name}/graph", summary="entities (ids, or those in sources), neighbours, relations")
    def graph(name: str, ids: str = Query("", max_length=2000), sources: str = Query("", max_length=2000)) -> dict:
        return served(name).neighbourhood(_numbers("ids", ids), _numbers("sources", sources))

    @app.get("/api/indexes/{name}/communities", summary="the communities, with their reports' titles")
    def communities(name: str) -> list[dict]:
        return served(name).communities()

    @app.get("/api/indexes/{name}/communities/{community}", summary="a community's report and entities")
    def report(name: str, community: str) -> dict:
        return served(name).report(community)

    @app.post(
        "/api/indexes/{name}/query",
        summary="ask a question: the SearchResult as JSON, or server-sent events with `stream`",
    )
    async def query(name: str, body: QueryRequest, request: Request) -> Response:
        s = served(name)
        if (body.level is not None or body.over is not None) and body.mode != "global":
            raise HTTPException(422, "level and over are only for global search")
        if body.strategy is not None and body.mode != "tree":
            raise HTTPException(422, "strategy is only for tree search")
        if body.mode == "tree" and not s.info["tree"]:  # the library's message names the operator's fix: a rebuild
            raise HTTPException(
                400, f"index '{name}' was built without a RAPTOR tree: ask in mode local, global or naive"
            )
        if s.answering and not body.only_context:
            raise HTTPException(503, s.answering)
        events = _answer(s, body, request, line, time_limit)
        first = await anext(events)  # retrieval's errors (an index without a tree...) come back as 4xx here
        if body.stream:
            return StreamingResponse(_sse(first, events), media_type="text/event-stream")
        async for kind, data in _chain(first, events):
            if kind == "result":
                return JSONResponse(data)
            if kind == "error":
                return _error(data["status"], data["error"])
        return Response(status_code=499)  # the client went away

    return app


def _numbers(what: str, text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise HTTPException(422, f"{what}: expected comma-separated numbers, got {text[:100]!r}") from None


def _for_client(s: ServedIndex | None, exc: TinyGraphRAGError) -> str:
    """The library's message with the index's name for its folder, which is the operator's to know."""
    return str(exc).replace(str(s.engine.path), f"'{s.name}'") if s else str(exc)


def _package_text(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


async def _chain(first: tuple[str, dict], rest: AsyncIterator[tuple[str, dict]]) -> AsyncIterator[tuple[str, dict]]:
    yield first
    async for event in rest:
        yield event


async def _sse(first: tuple[str, dict], rest: AsyncIterator[tuple[str, dict]]) -> AsyncIterator[str]:
    async for kind, data in _chain(first, rest):
        yield f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _search(s: ServedIndex, body: QueryRequest) -> Callable[[bool], SearchResult | StreamingResult]:
    """The engine call the request asks for (with its own settings and call counters)."""
    config, g = s.engine.config, s.engine.config.global_
    global_ = replace(g, source=body.over or g.source)
    config = replace(config, context_tokens=body.context_tokens or config.context_tokens, global_=global_)
    engine = s.engine.configured(config)
    by_mode: dict[str, dict[str, Any]] = {"global": {"level": body.level}, "tree": {"strategy": body.strategy}}
    kwargs = by_mode.get(body.mode, {})
    method = getattr(engine, f"{body.mode}_search")
    if body.mode == "global":  # a wrong level or a missing table fails now, before the line
        map_plan(engine.index, body.level, config.global_)
    return lambda stream: method(body.question, only_context=body.only_context, stream=stream, **kwargs)


async def _answer(
    s: ServedIndex, body: QueryRequest, request: Request, line: FairQueue, time_limit: float
) -> AsyncIterator[tuple[str, dict]]:
    """The request's events; the first is yielded (or raised) once retrieval is done."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + time_limit
    search = await asyncio.to_thread(_search, s, body)

    def retrieve() -> SearchResult | StreamingResult:
        with s.lock:
            return search(True)

    if body.only_context:
        result = await asyncio.to_thread(retrieve)
        yield "result", result.to_dict()
        return
    prepared = None if body.mode == "global" else await asyncio.to_thread(retrieve)
    ticket = line.join()
    try:
        while ticket.position:
            yield "queue", {"position": ticket.position}
            await ticket.moved(TICK)
            if await request.is_disconnected():
                return
            if loop.time() > deadline:
                yield "error", {"status": 503, "error": f"the request waited over its time limit ({time_limit:g} s)"}
                return
        yield "queue", {"position": 0}
        if prepared is None:
            prepared = await asyncio.to_thread(search, True)  # global: the map calls happen here, in its turn
        if isinstance(prepared, SearchResult):  # answered without generating (nothing to stream)
            yield "result", prepared.to_dict()
            return
        async for piece in _generate(prepared, request, deadline):
            yield "token", {"text": piece}
        if prepared.done:
            yield "result", prepared.result.to_dict()
        elif not await request.is_disconnected():
            yield "error", {"status": 504, "error": f"the answer took over the time limit ({time_limit:g} s)"}
    except TinyGraphRAGError as exc:
        yield "error", {"status": 400, "error": _for_client(s, exc)}
    except Exception:  # a bug: its traceback goes to the log, never to the page
        log.exception("query %r on %s failed", body.question[:100], s.name)
        yield "error", {"status": 500, "error": "the search failed: an internal error (see the server's log)"}
    finally:
        line.leave(ticket)


async def _generate(result: StreamingResult, request: Request, deadline: float) -> AsyncIterator[str]:
    """The answer's pieces, generated in a worker thread; stopped (and the model freed) when the
    client goes away or the deadline passes."""
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue = asyncio.Queue()
    stop = threading.Event()

    def work() -> None:
        try:
            stream = iter(result)
            for piece in stream:
                loop.call_soon_threadsafe(pieces.put_nowait, ("piece", piece))
                if stop.is_set():
                    if isinstance(stream, Generator):
                        stream.close()
                    result.close()
                    break
        except BaseException as exc:  # noqa: BLE001 - handed to the request, which reports it
            loop.call_soon_threadsafe(pieces.put_nowait, ("error", exc))
        loop.call_soon_threadsafe(pieces.put_nowait, ("end", None))

    worker = loop.run_in_executor(None, work)
    try:
        while True:
            try:
                kind, value = await asyncio.wait_for(pieces.get(), TICK)
            except asyncio.TimeoutError:
                kind, value = "tick", None
            if kind == "end":
                break
            if kind == "error":
                raise value
            if kind == "piece":
                yield value
            if loop.time() > deadline or await request.is_disconnected():
                stop.set()
    finally:
        stop.set()  # at once, even when this is cancelled: the thread stops after its next piece
    await worker
