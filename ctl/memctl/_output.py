"""Rendering results for people (rich) or machines (--json), and errors as exit codes."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.text import Text

from memory_bridge import ConfigError, Conflict, InvalidInput, MemctlError, NotFound, StoreUnavailable

from ._playbook import PlaybookFailed

__all__ = ["EXIT_CODES", "console", "emit_json", "fail", "json_option"]

console = Console(stderr=False, highlight=False)
err_console = Console(stderr=True, highlight=False)

EXIT_CODES: dict[type[MemctlError], int] = {
    ConfigError: 2,
    InvalidInput: 2,
    NotFound: 3,
    PlaybookFailed: 4,
    Conflict: 4,
    StoreUnavailable: 5,
}

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")


def emit_json(payload: dict[str, Any]) -> None:
    click.echo(json.dumps(payload, indent=2, ensure_ascii=False))


def exit_code(error: MemctlError) -> int:
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return 1


def fail(error: MemctlError, *, as_json: bool) -> NoReturn:
    """Report an error in the chosen format and exit with its class's code."""
    code = exit_code(error)
    if as_json:
        emit_json({"ok": False, "error": type(error).__name__, "message": str(error), "exit_code": code})
    else:
        message = Text("error:", style="bold red")
        message.append(f" {error}")  # plain text: brackets in the message are not markup
        err_console.print(message, soft_wrap=True)
    sys.exit(code)
