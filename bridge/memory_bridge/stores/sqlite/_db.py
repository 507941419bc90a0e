"""One SQLite database file in WAL mode, used from async code through a worker thread.

Reads run in a deferred transaction, writes in `BEGIN IMMEDIATE`, one at a time per
process; several processes on the same file serialise on SQLite's write lock.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

from ..._errors import StoreUnavailable
from ..._files import private_file
from ._errors import map_sqlite_errors

__all__ = ["Database"]

T = TypeVar("T")
Work = Callable[[sqlite3.Connection, float], T]


class Database:
    def __init__(
        self,
        path: Path,
        migrate: Callable[[sqlite3.Connection, str], int],
        *,
        busy_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        try:
            private_file(path)  # 0600 before SQLite creates it; its -wal and -shm files copy the mode
        except OSError as exc:
            raise StoreUnavailable(
                f"open: embedded store {path} cannot be created or opened ({exc.strerror})", operation="open"
            ) from exc
        with map_sqlite_errors("open", str(path)):
            self._conn = sqlite3.connect(
                path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            migrate(self._conn, str(path))

    async def read(self, operation: str, work: Work[T]) -> T:
        return await anyio.to_thread.run_sync(self.run, operation, work, False)

    async def write(self, operation: str, work: Work[T]) -> T:
        return await anyio.to_thread.run_sync(self.run, operation, work, True)

    def run(self, operation: str, work: Work[T], write: bool) -> T:
        """Run `work` in one transaction, blocking: for worker threads (async code uses
        `read` and `write`)."""
        with self._lock, map_sqlite_errors(operation, str(self.path)):
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                result = work(conn, self.clock())
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

    def probe(self, operation: str, sql: str) -> None:
        """Run one read on a read-only connection of its own, blocking: a health check that
        never queues behind this process's calls (a WAL reader does not wait for a writer)."""
        with map_sqlite_errors(operation, str(self.path)):
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
            try:
                conn.execute(sql).fetchone()
            finally:
                conn.close()

    def close(self) -> None:
        with self._lock:
            self._conn.close()
