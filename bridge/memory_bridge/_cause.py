"""Who is writing: the tool or command behind a change, carried through the call (its tasks
and worker threads) so the version log can name it without every layer passing it on."""

from __future__ import annotations

import contextlib
import contextvars
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["WriteCause", "caused_by", "current_cause", "name_cause"]


@dataclass(frozen=True, slots=True)
class WriteCause:
    """The tool or command (`tool save_to_dataset`, `memctl import`) and the operation id
    shared by every change one call makes."""

    cause: str
    operation_id: str


_CAUSE: contextvars.ContextVar[WriteCause | None] = contextvars.ContextVar("memctl_write_cause", default=None)


@contextlib.contextmanager
def caused_by(cause: str, operation_id: str | None = None) -> Iterator[WriteCause]:
    """Name the tool or command behind the writes made inside the block."""
    current = WriteCause(cause, operation_id or uuid.uuid4().hex)
    token = _CAUSE.set(current)
    try:
        yield current
    finally:
        _CAUSE.reset(token)


def name_cause(cause: str) -> WriteCause:
    """Name the cause for the rest of the current context (a CLI process runs one command)."""
    current = WriteCause(cause, uuid.uuid4().hex)
    _CAUSE.set(current)
    return current


def current_cause() -> WriteCause:
    """The cause set by the innermost `caused_by`, else an anonymous one."""
    return _CAUSE.get() or WriteCause("unknown", uuid.uuid4().hex)
