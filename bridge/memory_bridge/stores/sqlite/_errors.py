"""The one place sqlite3 exceptions become memctl errors."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from ..._errors import InvalidInput, StoreUnavailable

__all__ = ["map_sqlite_errors"]

# SQLite's own limits: the request was too big, the store is fine.
_LIMITS = ("too large", "too many", "too big", "too complex")


@contextmanager
def map_sqlite_errors(operation: str, path: str) -> Iterator[None]:
    """Translate sqlite3 failures raised inside the block: a request over one of SQLite's
    limits into InvalidInput, any other failure into StoreUnavailable."""
    try:
        yield
    except sqlite3.IntegrityError:
        raise  # a broken invariant is a bug, not an outage
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if any(limit in text for limit in _LIMITS):
            raise InvalidInput(
                "request", f"too large for the embedded store ({text}); ask for less", operation=operation
            ) from exc
        if "locked" in text or "busy" in text:
            message = f"{operation}: embedded store {path} is busy (another process holds the write lock)"
        else:
            message = f"{operation}: embedded store {path} is unusable: {text}"
        raise StoreUnavailable(message, operation=operation) from exc
    except sqlite3.DatabaseError as exc:
        raise StoreUnavailable(
            f"{operation}: embedded store {path} is damaged: {exc}", operation=operation
        ) from exc
