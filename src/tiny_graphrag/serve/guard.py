"""What every request passes first (a plain ASGI middleware, so streams and disconnects pass
through untouched): the Host check, the bearer token, the body-size limit, and headers that keep the page from loading
or sending anything anywhere else.

The body is bounded as it arrives, not by its headers: a chunked body (whatever Content-Length says beside it) or a
Content-Length larger than allowed is read only up to MAX_BODY bytes, then refused, so no request makes the server hold
more than that."""

from __future__ import annotations

import hmac
import json

MAX_BODY = 16 * 1024  # bytes: a question and its options
HEADERS = [
    # The page's own files only: nothing from another origin, no inline script (all data is put in as text).
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class Guard:
    """`token`: required as `Authorization: Bearer <token>` on every path but `public` (the page's
    own files, which hold no data); `hosts`: the Host names answered (None: any), which keeps a
    loopback server from answering pages of other sites through DNS rebinding."""

    def __init__(self, app, *, token: str | None, hosts: set[str] | None, public: set[str]) -> None:
        self.app, self.hosts, self.public = app, hosts, public
        self.expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        if (problem := self.problem(scope, headers)) is not None:
            return await refuse(send, *problem)
        body = await bounded_body(receive)
        if body is None:
            return await refuse(send, 413, f"the request body is over {MAX_BODY} bytes: ask a shorter question")

        async def replay() -> dict:  # the body as read, then the client's later messages (a disconnect)
            return body.pop(0) if body else await receive()

        async def with_headers(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": list(message.get("headers", [])) + HEADERS}
            await send(message)

        return await self.app(scope, replay, with_headers)

    def problem(self, scope, headers: dict[bytes, bytes]) -> tuple[int, str] | None:
        host = headers.get(b"host", b"").decode("latin-1").rsplit(":", 1)[0].strip("[]")
        if self.hosts is not None and host not in self.hosts:
            return 421, f"this server answers only requests addressed to {', '.join(sorted(self.hosts))}"
        if self.expected is not None and scope["path"] not in self.public:
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):  # constant time: the token cannot be guessed bytewise
                return 401, "a token is needed: send the header 'Authorization: Bearer <token given to --token>'"
        return None


async def bounded_body(receive) -> list[dict] | None:
    """The request's body messages, counted as they arrive; None once they pass MAX_BODY bytes
    (the rest is never read: the connection is closed after the refusal)."""
    messages, size = [], 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if size > MAX_BODY:
            return None
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body"):  # complete, or the client left
            return messages


async def refuse(send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    start.append((b"connection", b"close"))  # the body that may follow is not read: closing drops it
    await send({"type": "http.response.start", "status": status, "headers": start + extra + HEADERS})
    await send({"type": "http.response.body", "body": body})
