"""The one place sqlite3 exceptions become memctl errors."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from ..._errors import StoreUnavailable

__all__ = ["map_sqlite_errors"]


@contextmanager
def map_sqlite_errors(operation: str, path: str) -> Iterator[None]:
    """Translate sqlite3 failures raised inside the block into StoreUnavailable."""
    try:
        yield
    except sqlite3.IntegrityError:
        raise  # a broken invariant is a bug, not an outage
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if "locked" in text or "busy" in text:
            message = f"{operation}: embedded store {path} is busy (another process holds the write lock)"
        else:
            message = f"{operation}: embedded store {path} is unusable: {text}"
        raise StoreUnavailable(message, operation=operation) from exc
    except sqlite3.DatabaseError as exc:
        raise StoreUnavailable(
            f"{operation}: embedded store {path} is damaged: {exc}", operation=operation
        ) from exc
