"""A persistent cache of model calls, so that reruns resume and tests replay deterministically.

Keys are hashes of (namespace, model fingerprint, request); values are JSON. One SQLite file,
written with one transaction per put: a crash loses at most the call in flight.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from tiny_graphrag.errors import TinyGraphRAGError


class CacheFileError(TinyGraphRAGError, RuntimeError):
    """The call cache's file is not a readable SQLite database."""


def cache_key(namespace: str, model: str, request: Any) -> str:
    payload = json.dumps([namespace, model, request], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class CallCache:
    """Key/value store of model outputs; `hits` and `misses` count this process's lookups."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._mem: dict[str, Any] = {}
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            except sqlite3.DatabaseError as exc:
                self.close()
                # Not deleted for the user: it may be a file they pointed at by mistake.
                raise CacheFileError(
                    f"the model-call cache {self.path} cannot be read ({exc}). To fix: delete it; it only "
                    "holds cached model outputs, and the next run recomputes them"
                ) from exc

    def get(self, key: str) -> Any | None:
        with self._lock:
            if key not in self._mem and self._db is not None:
                row = self._db.execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    self._mem[key] = json.loads(row[0])
            if key in self._mem:
                self.hits += 1
                return self._mem[key]
            self.misses += 1
            return None

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._mem[key] = value
            if self._db is not None:
                self._db.execute(
                    "INSERT OR REPLACE INTO calls (key, value) VALUES (?, ?)",
                    (key, json.dumps(value, ensure_ascii=False)),
                )

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
