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
     15   └── MaintenanceLocked       another maintenance run of the project holds its lock

The bridge's classes live in `memory_bridge` (its tree is drawn in `memory_bridge._errors`);
the last four are the control plane's own. `EXIT_CODES` is the one table of exit codes:
the CLI group renders any of these errors once and exits with its class's code, and
docs/cli.md shows the table (scripts/gen_docs.py writes it from `EXIT_CODES`). Click's own
usage errors exit 2, like `ConfigError`.
"""

from __future__ import annotations

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
    from ._playbook import PlaybookRun

__all__ = [
    "EXIT_CODES",
    "AnswerInvalid",
    "MaintenanceLocked",
    "PlaybookFailed",
    "ProviderUnavailable",
    "exit_code",
]


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
    """Another maintenance run of this project holds its lock; this one did nothing."""


EXIT_CODES: dict[type[MemctlError], tuple[int, str]] = {
    MemctlError: (1, "any other error"),
    ConfigError: (2, "settings, options, an inventory or a store URL are wrong"),
    NotFound: (3, "the thing asked for does not exist"),
    Conflict: (4, "the target holds data that clashes with the request"),
    StoreUnavailable: (5, "a store cannot be reached or used; retrying may help"),
    PlaybookFailed: (6, "a provisioning task failed or a machine was unreachable"),
    InvalidInput: (7, "an argument or input file is wrong"),
    AccessDenied: (8, "a store refused the credentials or permissions"),
    StoreFailed: (9, "a store took the request and failed on it"),
    StoreError: (10, "a store operation failed"),
    MetadataPending: (11, "Dify took a document's text but not its metadata"),
    EmbedderUnavailable: (12, "the embedding model cannot load or its endpoint failed"),
    ProviderUnavailable: (13, "the capture LLM could not answer; retrying may help"),
    AnswerInvalid: (14, "the capture LLM's answer is not the JSON asked for"),
    MaintenanceLocked: (15, "another maintenance run of the project holds its lock; nothing was done"),
    LinkRefused: (16, "a link stands where memctl would write; it was left alone"),
}
"""Each error class's exit code and what it means: the one table (docs/cli.md shows it)."""


def exit_code(error: MemctlError) -> int:
    """The code of the error's class, else of its nearest listed ancestor."""
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls][0]
    return EXIT_CODES[MemctlError][0]
