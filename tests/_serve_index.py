"""A small real index for the server's tests, and a real uvicorn server in a thread (holds no tests).

The names index (tests/_names_index.py: markup, quotes and Chinese in names) plus a document
whose text holds a <script> element and javascript: links, which the page must show as text.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from _names_index import ENGLISH, build_names_index, chinese_excerpt

from tiny_graphrag import Text

EVIL = (
    'Acme <Labs> wrote <script>document.title="pwned"</script> and <a href="javascript:alert(1)">a link</a> '
    "javascript:alert(2) for Smith, Jones & Co. in New York. "
)


def build_serve_index(out: Path) -> Path:
    build_names_index(out, texts=[ENGLISH * 2, chinese_excerpt(), Text(EVIL * 2)])
    return out


@contextlib.contextmanager
def serving(app) -> Iterator[str]:
    """`app` on a free loopback port, served by uvicorn in a thread; yields its base URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:  # a few ms; the thread raises nothing we could miss here
        if not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
