"""`tiny-graphrag serve`: its arguments, and starting the server (kept here, not in cli/)."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import logging
import os
import socket
from typing import Any

from tiny_graphrag.errors import ConfigError, InputError, require

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def add_parser(sub: argparse._SubParsersAction, kw: dict[str, Any]) -> None:
    s = sub.add_parser(
        "serve", help="serve indexes to a browser and over a JSON API (needs tiny-graphrag[serve])", **kw
    )
    s.add_argument("indexes", nargs="+", help="index folders written by build; each is addressed by its folder name")
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on; any but the loopback needs --token (others on the network can connect)",
    )
    s.add_argument("--port", type=int, default=8000, help="TCP port (0: any free one, printed at start)")
    s.add_argument(
        "--token",
        default=os.environ.get("TINY_GRAPHRAG_TOKEN"),
        help="a secret every request must carry (Authorization: Bearer TOKEN; the page asks for it once). "
        "Default: $TINY_GRAPHRAG_TOKEN, which keeps it out of the process list",
    )
    s.add_argument("--llm", help="GGUF file name under models/ or a path (default: the one each index was built with)")
    s.add_argument("--n-ctx", type=int, help="LLM context window in tokens (default: the build's)")
    s.add_argument("--models-dir", help="where models live (default: $TINY_GRAPHRAG_MODELS or ./models)")
    s.add_argument("--time-limit", type=float, default=300.0, help="seconds a question may wait and generate")


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host in LOOPBACK_NAMES


def listen(host: str, port: int) -> socket.socket:
    """The bound, listening socket (before any index is loaded), or an error naming the port and --port."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: a port is in [0, 65535]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(
                f"port {port} on {host} is in use (another server?): choose another with --port N"
            ) from None
        raise InputError(f"cannot listen on {host}:{port} ({exc.strerror or exc}): check --host and --port") from None
    # listening from now on: a client that connects once the address is printed waits in the backlog
    # until the server accepts, instead of being refused
    sock.listen(2048)
    return sock


def run(args: argparse.Namespace) -> int:
    require("fastapi", "serve", "The web server")
    uvicorn = require("uvicorn", "serve", "The web server")
    from tiny_graphrag.serve.app import create_app
    from tiny_graphrag.serve.indexes import open_indexes

    if not is_loopback(args.host) and not args.token:
        raise ConfigError(
            f"--host {args.host} lets other machines connect: also give --token SECRET (or set "
            "TINY_GRAPHRAG_TOKEN), which every request must then carry, or keep the default --host 127.0.0.1"
        )
    if args.time_limit <= 0:
        raise ConfigError(f"--time-limit {args.time_limit:g}: give a positive number of seconds")
    sock = listen(args.host, args.port)
    try:
        indexes = open_indexes(args.indexes, llm=args.llm, n_ctx=args.n_ctx, models_dir=args.models_dir)
        hosts = LOOPBACK_NAMES | {args.host} if is_loopback(args.host) else None
        app = create_app(indexes, token=args.token, hosts=hosts, time_limit=args.time_limit)
        port = sock.getsockname()[1]
        shown = f"[{args.host}]" if ":" in args.host else args.host
        print(f"serving {', '.join(indexes)} at http://{shown}:{port}/ (Ctrl-C stops)", flush=True)
        level = "info" if logging.getLogger("tiny_graphrag").isEnabledFor(logging.INFO) else "warning"
        try:
            uvicorn.Server(uvicorn.Config(app, log_level=level, timeout_graceful_shutdown=5)).run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn shut down cleanly, then passes Ctrl-C on
            print("stopped", flush=True)
    finally:
        sock.close()
    return 0
