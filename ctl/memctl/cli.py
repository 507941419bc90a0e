"""The `memctl` command group.

Commands are imported when they are run, so a quick command (a hook, `--version`) does
not pay for the MCP server, Ansible or the stores that other commands need. The group is
the one error boundary: a `MemctlError` from any command is rendered here, once (text on
stderr, or the command's `--json` object), and exits with its class's code
(`memctl._errors.EXIT_CODES`).
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any

import click

from memory_bridge import MemctlError, name_cause, one_blas_thread

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}

COMMANDS: dict[str, str] = {
    "audit": "memctl.commands.audit:audit",
    "backup": "memctl.commands.backup:backup",
    "capture": "memctl.commands.capture:capture",
    "compile": "memctl.commands.capture:compile_",
    "completion": "memctl.commands.completion:completion",
    "dify": "memctl.commands.dify:dify",
    "doctor": "memctl.commands.doctor:doctor",
    "down": "memctl.commands.down:down",
    "edit": "memctl.commands.memory:edit",
    "export": "memctl.commands.markdown:export",
    "flush": "memctl.commands.capture:flush",
    "forget": "memctl.commands.memory:forget",
    "history": "memctl.commands.history:history",
    "hook": "memctl.commands.capture:hook",
    "import": "memctl.commands.markdown:import_",
    "init": "memctl.commands.init:init",
    "lessons": "memctl.commands.memory:lessons",
    "logs": "memctl.commands.logs:logs",
    "maintain": "memctl.commands.maintain:maintain",
    "migrate": "memctl.commands.migrate:migrate_command",
    "migrate-store": "memctl.commands.migrate_store:migrate_store",
    "outbox": "memctl.commands.outbox:outbox",
    "projects": "memctl.commands.projects:projects",
    "restore": "memctl.commands.restore:restore",
    "rollback": "memctl.commands.history:rollback",
    "search": "memctl.commands.memory:search",
    "serve": "memctl.commands.serve:serve",
    "show": "memctl.commands.memory:show",
    "status": "memctl.commands.status:status",
    "token": "memctl.commands.token:token",
    "ui": "memctl.commands.ui:ui",
    "up": "memctl.commands.up:up",
    "upgrade": "memctl.commands.upgrade:upgrade",
}
"""Each command's name and where it lives (`module:attribute`)."""


def _did_you_mean(name: str) -> str:
    """The hint after "No such command": the commands spelled closest to `name`, if any."""
    close = difflib.get_close_matches(name, COMMANDS)
    if not close:
        return ""
    if len(close) == 1:
        return f" Did you mean {close[0]!r}?"
    return f" Did you mean one of: {', '.join(map(repr, close))}?"


class LazyGroup(click.Group):
    """A group whose commands are imported only when used (or listed in --help), and
    which reports any `MemctlError` they raise."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemctlError as error:
            from .commands._output import render_error, wants_json

            ctx.exit(render_error(error, as_json=wants_json(ctx)))

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0]
        if name not in COMMANDS and not name.startswith("-") and not ctx.resilient_parsing:
            ctx.fail(f"No such command {name!r}.{_did_you_mean(name)}")
        found, command, rest = super().resolve_command(ctx, args)
        name_cause(f"memctl {found}")  # the version log names the command behind each change
        return found, command, rest

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, _, attribute = COMMANDS[cmd_name].partition(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="memctl", prog_name="memctl")
def cli() -> None:
    """Persistent, typed project memory for AI coding agents, over MCP.

    \b
    Example:
      memctl up                 provision this directory and check it end to end
      memctl serve              serve this directory's memory on stdio
      memctl status             each store's health and size, writes waiting for Dify
      memctl doctor             every prerequisite, with what to do about each
    """
    one_blas_thread()  # before any command loads numpy
