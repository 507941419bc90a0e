"""Rendering results for people (rich) or machines (--json), and errors as exit codes."""

from __future__ import annotations

import json
import shutil
from typing import Any

import click
from rich.console import Console, ConsoleDimensions
from rich.text import Text

from memory_bridge import MemctlError

from .._errors import exit_code

__all__ = ["console", "emit_json", "json_option", "render_error", "wants_json"]


class _Console(Console):
    """A console as wide as the terminal when it prints (COLUMNS first, as `shutil` reads
    it), not as it was when the console was made."""

    @property
    def size(self) -> ConsoleDimensions:
        columns, lines = shutil.get_terminal_size()
        return ConsoleDimensions(columns, lines)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        raise AttributeError("the console's size is the terminal's")


# soft_wrap: the terminal wraps a long line; Rich breaking it with a newline would also break
# the paths in it, which people copy from the output (tables still fit the width).
console = _Console(stderr=False, highlight=False, soft_wrap=True)
err_console = _Console(stderr=True, highlight=False, soft_wrap=True)

_JSON = "memctl.json"


def _remember_json(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    ctx.meta[_JSON] = value  # meta is shared by every context of the run: the group sees it
    return value


json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    is_eager=True,  # known before any other option can fail
    callback=_remember_json,
    help="Print one JSON object instead of text.",
)


def wants_json(ctx: click.Context) -> bool:
    """Whether the command being run was given --json."""
    return bool(ctx.meta.get(_JSON, False))


def emit_json(payload: dict[str, Any]) -> None:
    click.echo(json.dumps(payload, indent=2, ensure_ascii=False))


def render_error(error: MemctlError, *, as_json: bool) -> int:
    """Report an error in the chosen format; return its class's exit code."""
    code = exit_code(error)
    if as_json:
        emit_json({"ok": False, "error": type(error).__name__, "message": str(error), "exit_code": code})
    else:
        message = Text("error:", style="bold red")
        message.append(f" {error}")  # plain text: brackets in the message are not markup
        err_console.print(message)
    return code
