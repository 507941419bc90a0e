"""The `memctl` command group."""

from __future__ import annotations

import click

from .commands.capture import capture, compile_, flush, hook
from .commands.dify import dify
from .commands.doctor import doctor
from .commands.migrate_store import migrate_store
from .commands.projects import projects
from .commands.serve import serve
from .commands.status import status
from .commands.up import up

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="memctl", prog_name="memctl")
def cli() -> None:
    """Persistent, typed project memory for AI coding agents, over MCP.

    \b
    Example:
      memctl up                 provision this directory and check it end to end
      memctl serve              serve this directory's memory on stdio
      memctl status             each store's health and size, writes waiting for Dify
      memctl migrate-store --to valkey://127.0.0.1:6379/0
    """


cli.add_command(up)
cli.add_command(serve)
cli.add_command(migrate_store)
cli.add_command(status)
cli.add_command(dify)
cli.add_command(projects)
cli.add_command(doctor)
cli.add_command(hook)
cli.add_command(flush)
cli.add_command(compile_)
cli.add_command(capture)
