"""The bridge's error classes: the memctl error tree without the CLI's own.

    MemctlError                 anything memctl reports to a user or an agent
    ├── StoreError              a store operation failed; carries .operation
    │   ├── InvalidInput        bad argument: names the field and the problem
    │   │   └── LinkRefused     a link stands where memctl would write: left alone
    │   ├── NotFound            the thing asked for does not exist
    │   ├── Conflict            the store refused a change that clashes with its state
    │   ├── AccessDenied        the store refused our credentials or permissions
    │   ├── StoreFailed         the store took the request and failed on it (a 500)
    │   ├── StoreUnavailable    the store cannot be reached or used (retryable)
    │   │   └── EmbedderUnavailable  the embedding model cannot load or its endpoint failed
    │   └── MetadataPending     Dify took a document's text but not its metadata (replayable)
    └── ConfigError             settings or a store URL are wrong (at startup)

memctl (the CLI) adds its own classes; `memctl._errors` draws the whole tree, with the
exit code of each class.

Foreign exceptions (sqlite3, valkey, httpx) are translated where they enter our
code, into the most specific class above. An outage is never "not found", and
"not found" is never an outage. A lost compare-and-set is not an error: memory_set
answers it in-band (`{"ok": false, "error": "conflict", ...}`), as memory-mcp does.
An embedder that fails is not fatal: search degrades to keywords and says so.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "AccessDenied",
    "ConfigError",
    "Conflict",
    "EmbedderUnavailable",
    "InvalidInput",
    "LinkRefused",
    "MemctlError",
    "MetadataPending",
    "NotFound",
    "StoreError",
    "StoreFailed",
    "StoreUnavailable",
]


class MemctlError(Exception):
    """Base of every error memctl raises on purpose."""


class ConfigError(MemctlError):
    """A setting, a store URL or a token file is unusable."""


class StoreError(MemctlError):
    """A store operation failed; `.operation` names what was being done."""

    def __init__(self, message: str, *, operation: str | None = None) -> None:
        super().__init__(message)
        self._operation = operation

    @property
    def operation(self) -> str:
        if self._operation is None:
            raise RuntimeError("StoreError.operation was never set")
        return self._operation


class InvalidInput(StoreError):
    """An argument failed validation; the message names the field."""

    def __init__(self, field: str, problem: str, *, operation: str | None = None) -> None:
        super().__init__(f"{field}: {problem}", operation=operation)
        self.field = field
        self.problem = problem


class LinkRefused(InvalidInput):
    """A symbolic link stands where memctl would write (a file or a folder on the way);
    memctl writes nothing through it and leaves it alone."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            str(path), "is a symbolic link; memctl does not write through links, so it was left alone"
        )
        self.path = path


class NotFound(StoreError):
    """The entry (or version) asked for does not exist."""


class Conflict(StoreError):
    """The store refused a change that clashes with its current state (e.g. a name in use)."""


class AccessDenied(StoreError):
    """The store refused our credentials or permissions; retrying will not help."""


class StoreFailed(StoreError):
    """The store answered but failed on this request (an internal error): not an outage,
    so it may be retried a few times but never forever."""


class StoreUnavailable(StoreError):
    """The store cannot be reached or is unusable right now; retrying may help."""


class EmbedderUnavailable(StoreUnavailable):
    """The embedding model cannot load, or its endpoint failed: dense search is off, keyword
    search keeps working (the search result says it is degraded)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, operation="embed")


class MetadataPending(StoreError):
    """A save whose text Dify took but whose metadata write failed (replaying it is safe)."""

    def __init__(self, document_id: str, created: bool, cause: StoreError) -> None:
        super().__init__(f"text saved, metadata pending: {cause}", operation="write metadata")
        self.document_id = document_id
        self.created = created
        self.cause = cause
