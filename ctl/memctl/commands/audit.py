"""`memctl audit`: documents worth retiring, shown as tables; retired only on confirmation."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import click
from rich.table import Table
from rich.text import Text

from memory_bridge import ConfigError
from memory_bridge.core import AUDIT_CLASSES, Finding, audit_memory, retire
from memory_bridge.stores import KnowledgeStore, open_knowledge_store

from .._refs import document_ref
from ..provision._project import provisioned_settings
from ._options import project_option
from ._output import console, emit_json, json_option
from ._tables import Column, fitted_table


def _table(findings: list[Finding]) -> Table:
    columns = (Column("class"), Column("document"), Column("reason"), Column("suggested", drop=1))
    rows = [
        (
            Text(f.class_),
            Text(document_ref(f.slot, f.name)),
            Text(f.reason),
            Text(f.suggested_action),
        )
        for f in findings
    ]
    return fitted_table(f"memctl audit: {len(findings)} finding(s)", columns, rows)


def _confirmed(findings: list[Finding], yes: bool) -> list[Finding]:
    """The findings the operator agrees to act on: per class, all, each or none."""
    if yes:
        return findings
    by_class: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_class[f.class_].append(f)
    chosen: list[Finding] = []
    try:
        for cls, members in by_class.items():
            action = members[0].suggested_action
            answer = click.prompt(
                f"{action} {len(members)} document(s) of class {cls}? [a]ll, [e]ach, [s]kip",
                type=click.Choice(["a", "e", "s"]),
                default="s",
                show_choices=False,
            )
            if answer == "a":
                chosen += members
            elif answer == "e":
                chosen += [
                    f
                    for f in members
                    if click.confirm(f"  {f.suggested_action} {f.slot}/{f.name}?", default=False)
                ]
    except click.Abort:  # end of input: nothing more is confirmed
        click.echo("", err=True)
    return chosen


async def _run(
    project: Path | None,
    classes: tuple[str, ...],
    stale_days: int | None,
    apply: bool,
    yes: bool,
    as_json: bool,
) -> dict[str, Any]:
    settings = provisioned_settings(project)
    store: KnowledgeStore = open_knowledge_store(settings)
    try:
        found = await audit_memory(
            store,
            scope=settings.project_scope,
            classes=list(classes) or None,
            stale_lore_days=stale_days or settings.maintain.audit_lore_stale_days,
        )
        if not as_json:
            console.print(_table(found.findings))
        applied: list[Finding] = []
        if apply and found.findings:
            chosen = await anyio.to_thread.run_sync(_confirmed, found.findings, yes)
            for finding in chosen:
                if await retire(store, finding):
                    applied.append(finding)
        report: dict[str, Any] = found.model_dump()
        report["applied"] = [
            {"slot": f.slot, "documentId": f.documentId, "name": f.name, "action": f.suggested_action}
            for f in applied
        ]
        report["changed"] = bool(applied)
        return report
    finally:
        await store.close()


@click.command()
@project_option
@click.option(
    "--class",
    "classes",
    multiple=True,
    type=click.Choice(AUDIT_CLASSES),
    help="Only this class of finding (repeatable; default: all).",
)
@click.option("--stale-days", type=click.IntRange(min=1), help="Age at which project-lore counts as stale.")
@click.option("--apply", is_flag=True, help="Disable or delete findings, as each suggests, once confirmed.")
@click.option("--yes", is_flag=True, help="With --apply: act on every finding without asking.")
@json_option
def audit(
    project: Path | None,
    classes: tuple[str, ...],
    stale_days: int | None,
    apply: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Find knowledge documents worth retiring (the audit_memory tool's four classes).

    Without --apply nothing changes. With --apply, each class is offered in turn:
    act on all of its documents, confirm them one by one, or skip it; stale plans and
    duplicate lessons are deleted, documents missing metadata and stale project-lore
    are disabled. Nothing is changed without a confirmation or --yes; --apply --json
    needs --yes, as there is no one to ask.

    \b
    Example:
      memctl audit
      memctl audit --class duplicate-error-pattern --apply
      memctl audit --apply --yes --json
    """
    if apply and as_json and not yes:
        raise ConfigError("--apply with --json needs --yes: there is no one to confirm each change")
    report = anyio.run(_run, project, classes, stale_days, apply, yes, as_json)
    if as_json:
        emit_json(report)
    elif apply:
        console.print(f"applied {len(report['applied'])} of {len(report['findings'])} finding(s)")
