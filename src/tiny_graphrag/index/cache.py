"""A persistent cache of model calls, so that reruns resume and tests replay deterministically.

Keys are hashes of (namespace, model fingerprint, request); values are JSON. One SQLite file, written with one
transaction per put: a crash loses at most the call in flight. A file we create carries our marker table; an existing
database without it is someone else's and is refused without being written to."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from tiny_graphrag.errors import TinyGraphRAGError


class CacheFileError(TinyGraphRAGError, RuntimeError):
    """The call cache's file is not a readable SQLite database, not ours, or cannot be written."""


# Our own table, written when a cache file is created: a database without it belongs to someone
# else and is never written to (not even switched to WAL mode).
MARKER_TABLE = "tiny_graphrag_call_cache"


def _legacy_calls_table(db: sqlite3.Connection) -> bool:
    """The one table of a cache written before the marker: exactly `calls (key TEXT PRIMARY KEY, value TEXT NOT NULL)`."""
    columns = [(r[1], r[2].upper(), r[3], r[5]) for r in db.execute("PRAGMA table_info(calls)")]
    return columns == [("key", "TEXT", 0, 1), ("value", "TEXT", 1, 0)]


def _open(path: Path) -> sqlite3.Connection:
    """A connection to our cache file at `path`, created if missing; any other file is refused untouched."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where the folder should be, or a folder we may not write
        raise CacheFileError(
            f"cannot create the model-call cache folder {path.parent} ({exc.strerror or exc}). To fix: move "
            "away a file at that path, make the folder writable or free disk space, or choose another cache folder "
            "(BuildConfig.cache_dir)"
        ) from exc
    db: sqlite3.Connection | None = None
    try:
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables == {"calls"} and _legacy_calls_table(db):
            tables = set()  # written before the marker existed (bench caches, old builds): ours, marked now
        if tables and MARKER_TABLE not in tables:
            db.close()
            raise CacheFileError(
                f"{path} is an SQLite database that tiny-graphrag did not create (it holds "
                f"{', '.join(sorted(tables)[:5])}); it was left untouched. To fix: choose another cache folder "
                "(BuildConfig.cache_dir), or move that file away; if it is an older tiny-graphrag cache, delete it "
                "(it only holds cached model outputs)"
            )
        db.execute("PRAGMA journal_mode=WAL")
        if not tables:
            db.execute(f"CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (version INTEGER NOT NULL)")
            db.execute(f"INSERT INTO {MARKER_TABLE} (version) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM {MARKER_TABLE})")
        db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        return db
    except sqlite3.DatabaseError as exc:
        if db is not None:
            db.close()
        if isinstance(exc, sqlite3.OperationalError):  # cannot open or write: a folder, permissions, a full disk
            raise CacheFileError(
                f"the model-call cache {path} cannot be opened for writing ({exc}). To fix: make "
                f"{path.parent} writable (or free disk space), or choose another cache folder (BuildConfig.cache_dir)"
            ) from exc
        # Not deleted for the user: it may be a file they pointed at by mistake.
        raise CacheFileError(
            f"the model-call cache {path} cannot be read ({exc}). To fix: delete it; it only "
            "holds cached model outputs, and the next run recomputes them"
        ) from exc


def cache_key(namespace: str, model: str, request: Any) -> str:
    payload = json.dumps([namespace, model, request], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class CallCache:
    """Key/value store of model outputs; `hits` and `misses` count this process's lookups."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self.hits = self.misses = 0
        self._lock = threading.Lock()
        self._mem: dict[str, Any] = {}
        self._db: sqlite3.Connection | None = None if self.path is None else _open(self.path)

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
