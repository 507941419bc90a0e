"""`memctl doctor`: check every prerequisite and component, and say what to do about each."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from .._errors import ExitStatus
from ..operations._doctor import run_checks
from ..provision._project import current_project
from ._options import project_option
from ._output import console, emit_json, json_option

_STYLE = {"ok": "[green]ok[/]", "warn": "[yellow]warn[/]", "fail": "[red]fail[/]"}


@click.command()
@project_option
@click.option(
    "--stack",
    is_flag=True,
    help="Also check Docker and Compose (automatic when a stack project is registered).",
)
@json_option
def doctor(project: Path | None, stack: bool, as_json: bool) -> None:
    """Check Python, Ansible, the embedding model, Docker, the registered projects and this
    project's stores, token and client configs; for each problem, say what to do.

    Exit code 0 when nothing failed (warnings allowed), 1 otherwise.

    \b
    Example:
      memctl doctor
      memctl doctor --project ~/src/app --stack --json
    """
    directory = current_project(project)
    checks = run_checks(directory, stack=stack)
    ok = not any(c.status == "fail" for c in checks)
    if as_json:
        emit_json({"ok": ok, "project": str(directory), "checks": [asdict(c) for c in checks]})
    else:
        table = Table(title=f"memctl doctor: {directory}", title_justify="left")
        for column in ("check", "status", "detail", "what to do"):
            table.add_column(column)
        for check in checks:
            table.add_row(check.name, _STYLE[check.status], escape(check.detail), escape(check.fix))
        console.print(table)
    if not ok:
        raise SystemExit(ExitStatus.FAILED)
