"""Every error memctl reports, drawn once, with the exit code the CLI gives each.

    exit  class
      1   MemctlError                 any other error memctl raises on purpose
      2   ├── ConfigError             settings, options, an inventory or a store URL are wrong
     10   ├── StoreError              a store operation failed (no more specific class)
      7   │   ├── InvalidInput        an argument or input file is wrong: names the field
     16   │   │   └── LinkRefused     a link stands where memctl would write: left alone
      3   │   ├── NotFound            the thing asked for does not exist
      4   │   ├── Conflict            the target holds data that clashes (e.g. restore, no --merge)
      8   │   ├── AccessDenied        the store refused the credentials or permissions
      9   │   ├── StoreFailed         the store took the request and failed on it (a 500)
      5   │   ├── StoreUnavailable    the store cannot be reached or used (retryable)
     12   │   │   └── EmbedderUnavailable  the embedding model cannot load or its endpoint failed
     11   │   └── MetadataPending     Dify took a document's text but not its metadata
      6   ├── PlaybookFailed          a provisioning task failed or a machine was unreachable
     13   ├── ProviderUnavailable     the capture LLM could not answer (retryable)
     14   ├── AnswerInvalid           the capture LLM's answer is not the JSON asked for
     15   └── MaintenanceLocked       another run holds the lock it needs (maintenance, a flush)

The bridge's classes live in `memory_bridge` (its tree is drawn in `memory_bridge._errors`);
the last four are the control plane's own. `ExitStatus` names every exit code memctl gives
and `EXIT_CODES` gives each class its status: the one table. The CLI group renders any of
these errors once and exits with its class's status; a command whose report already says
what failed (a check, a step, a difference) exits with a status by name, never a bare
number. docs/cli.md shows the table (scripts/gen_docs.py writes it from `EXIT_CODES`).
Click's own usage errors exit 2, like `ConfigError`.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING

from memory_bridge import (
    AccessDenied,
    ConfigError,
    Conflict,
    EmbedderUnavailable,
    InvalidInput,
    LinkRefused,
    MemctlError,
    MetadataPending,
    NotFound,
    StoreError,
    StoreFailed,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from .provision._playbook import PlaybookRun

__all__ = [
    "EXIT_CODES",
    "AnswerInvalid",
    "ExitStatus",
    "MaintenanceLocked",
    "PlaybookFailed",
    "ProviderUnavailable",
    "exit_code",
]


class ExitStatus(IntEnum):
    """Every exit code memctl gives, by name; `EXIT_CODES` says what each means."""

    OK = 0
    FAILED = 1
    CONFIG = 2
    NOT_FOUND = 3
    CONFLICT = 4
    UNAVAILABLE = 5
    PLAYBOOK_FAILED = 6
    INVALID_INPUT = 7
    ACCESS_DENIED = 8
    STORE_FAILED = 9
    STORE_ERROR = 10
    METADATA_PENDING = 11
    EMBEDDER_UNAVAILABLE = 12
    PROVIDER_UNAVAILABLE = 13
    ANSWER_INVALID = 14
    LOCKED = 15
    LINK_REFUSED = 16


class PlaybookFailed(MemctlError):
    """A playbook task failed or a host was unreachable; `run` holds what did happen."""

    def __init__(self, message: str, run: PlaybookRun) -> None:
        super().__init__(message)
        self.run = run


class ProviderUnavailable(MemctlError):
    """The LLM could not answer: not installed, timed out, failed, or refused the request."""


class AnswerInvalid(MemctlError):
    """An LLM answer that is not the JSON asked for."""


class MaintenanceLocked(MemctlError):
    """Another maintenance run of this project holds its lock; this one did nothing.

    Its status, `ExitStatus.LOCKED`, is also a flush's when another flush of the session holds
    the session's lock."""


EXIT_CODES: dict[type[MemctlError], tuple[ExitStatus, str]] = {
    MemctlError: (ExitStatus.FAILED, "any other error, or what the command's report says failed"),
    ConfigError: (ExitStatus.CONFIG, "settings, options, an inventory or a store URL are wrong"),
    NotFound: (ExitStatus.NOT_FOUND, "the thing asked for does not exist"),
    Conflict: (
        ExitStatus.CONFLICT,
        "the target holds data that clashes with the request, or differs after a copy",
    ),
    StoreUnavailable: (ExitStatus.UNAVAILABLE, "a store cannot be reached or used; retrying may help"),
    PlaybookFailed: (ExitStatus.PLAYBOOK_FAILED, "a provisioning task failed or a machine was unreachable"),
    InvalidInput: (ExitStatus.INVALID_INPUT, "an argument or input file is wrong"),
    AccessDenied: (ExitStatus.ACCESS_DENIED, "a store refused the credentials or permissions"),
    StoreFailed: (ExitStatus.STORE_FAILED, "a store took the request and failed on it"),
    StoreError: (ExitStatus.STORE_ERROR, "a store operation failed"),
    MetadataPending: (ExitStatus.METADATA_PENDING, "Dify took a document's text but not its metadata"),
    EmbedderUnavailable: (
        ExitStatus.EMBEDDER_UNAVAILABLE,
        "the embedding model cannot load or its endpoint failed",
    ),
    ProviderUnavailable: (
        ExitStatus.PROVIDER_UNAVAILABLE,
        "the capture LLM could not answer; retrying may help",
    ),
    AnswerInvalid: (ExitStatus.ANSWER_INVALID, "the capture LLM's answer is not the JSON asked for"),
    MaintenanceLocked: (
        ExitStatus.LOCKED,
        "another run holds the lock it needs (maintenance; a flush of the same session); nothing was done",
    ),
    LinkRefused: (ExitStatus.LINK_REFUSED, "a link stands where memctl would write; it was left alone"),
}
"""Each error class's exit code and what it means: the one table (docs/cli.md shows it)."""


def exit_code(error: MemctlError) -> ExitStatus:
    """The status of the error's class, else of its nearest listed ancestor."""
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls][0]
    return EXIT_CODES[MemctlError][0]
