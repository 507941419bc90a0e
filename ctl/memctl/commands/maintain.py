"""`memctl maintain`: the maintenance job, by hand or from the project's timer."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.text import Text

from .._errors import ExitStatus
from .._timefmt import iso_time
from ..operations._maintain import INTERVALS, PASSES, Pass, chosen_passes, due, run_maintenance, undo_run
from ..operations._maintain_report import change_counts, item_changes
from ..provision._project import provisioned_settings
from ..provision._record import recorded_project
from ._options import Duration, project_option
from ._output import console, emit_json, json_option

_STYLE = {"ok": "green", "failed": "red", "timeout": "red", "skipped": "yellow", "unavailable": "yellow"}


def _passes(ctx: click.Context, param: click.Parameter, value: str) -> list[Pass]:
    try:
        return chosen_passes(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from exc


@click.command()
@project_option
@click.option("--dry-run", is_flag=True, help="Report what each step would do; take no lock, write nothing.")
@click.option(
    "--passes",
    default="all",
    show_default=True,
    callback=_passes,
    help="Comma-separated steps to run, in the job's order: " + ", ".join(p.name for p in PASSES) + ".",
)
@click.option(
    "--if-due",
    is_flag=True,
    help="Do nothing when the last successful run is recent for the project's schedule "
    "(hourly, else daily); the timer runs this.",
)
@click.option(
    "--step-timeout",
    type=Duration(),
    default="30m",
    show_default=True,
    help="Stop a step (and everything it started) that runs longer than this.",
)
@click.option(
    "--compact-budget",
    type=Duration(),
    default=None,
    help="Time the compact-entries step may spend writing before it stops "
    "(default: the compact_budget_seconds setting, 120 s).",
)
@click.option(
    "--undo",
    "undo",
    metavar="RUN",
    help="Write back every document and entry run RUN changed, as it was before that run (once).",
)
@json_option
@click.pass_context
def maintain(
    ctx: click.Context,
    project: Path | None,
    dry_run: bool,
    passes: list[Pass],
    if_due: bool,
    step_timeout: float,
    compact_budget: float | None,
    undo: str | None,
    as_json: bool,
) -> None:
    """Run the maintenance job: compile captured sessions, then the maintenance passes.

    Steps run in order, each stopped after --step-timeout: compile (in its own process
    group; skipped when capture is off), then the passes that tidy the refine slots:
    identical bodies and lesson-key duplicates archived (superseded_by), near-duplicates
    merged or kept by the capture LLM, stale lessons flagged, then kept, rewritten or
    archived by the LLM, long-archived documents truncated, old document versions thinned
    to one a day (document_versions_thin_after_days; off by default); then
    compact-entries links the entries that name each other (## Referenced by blocks, stub
    entries), within --compact-budget. dedupe-by-similarity only lists near-duplicate pairs. Without a
    capture provider the LLM passes are skipped with a line and change nothing. --dry-run
    says what each pass would do (and what it would ask the LLM, asking nothing).
    Under each step, one line per item it changed: its SLOT/NAME or entry:ID and how.
    Each document and entry a run changes is kept as it was, and --undo RUN writes it back
    (versions thinned stay gone).
    Only one run per project at a time: a second one stops at once, doing nothing.
    Each run (not --dry-run) writes one redacted record under .memory/maintain/, which
    `memctl status` and the cron_health tool read; three failures in a row with the
    same error open an escalation report, resolved by the next run without that error.

    Exit codes: 0 the run succeeded (or was not due), 1 a step failed or timed out
    (compact-entries: also budget, truncated or partial), 2 bad settings, 3 no memory
    here (--undo: no such run to undo), 7 --undo of something not a run id, 15 another
    run holds the lock.

    \b
    Example:
      memctl maintain --dry-run
      memctl maintain --passes compile --json
      memctl maintain --project ~/src/app --if-due
      memctl maintain --undo 3f2a9c01b7de
    """
    settings = provisioned_settings(project)
    if undo is not None:
        given = [
            name
            for name, param in (
                ("--dry-run", "dry_run"),
                ("--passes", "passes"),
                ("--if-due", "if_due"),
                ("--compact-budget", "compact_budget"),
            )
            if ctx.get_parameter_source(param) is click.core.ParameterSource.COMMANDLINE
        ]
        if given:
            raise click.UsageError(f"--undo takes none of {', '.join(given)}")
        undone = undo_run(settings, undo)
        if as_json:
            emit_json(undone)
        else:
            console.print(
                f"run {undone['run_id']} undone: {undone['restored']} documents and "
                f"{undone['entries_restored']} entries restored"
            )
            for ref in undone["items"]:
                if ref not in undone["entries_left"]:
                    console.print(f"  restored {escape(ref)}")
            if undone["entries_left"]:
                left = ", ".join(undone["entries_left"])
                console.print(f"  left as they are (changed since the run): {escape(left)}")
        return
    if if_due and not dry_run:
        record = recorded_project(settings.project)
        schedule = record.schedule if record is not None else None
        is_due, last = due(settings.project, schedule, time.time())
        if not is_due:
            interval = INTERVALS.get(schedule or "daily", INTERVALS["daily"])
            when = iso_time(last or 0)
            reason = f"not due: last success at {when}, runs every {interval / 3600:g} h"
            if as_json:
                emit_json({"ok": True, "skipped": reason, "steps": []})
            else:
                console.print(f"maintain skipped: {reason}")
            return
    report = run_maintenance(
        settings,
        passes,
        dry_run=dry_run,
        trigger="schedule" if if_due else "manual",
        step_timeout=step_timeout,
        compact_budget=compact_budget,
    )
    changes = item_changes(report["actions"])
    report = {
        **report,
        "started_at": iso_time(report["started_at"]),
        "finished_at": iso_time(report["finished_at"]),
        "changes": changes,
        "counts": change_counts(changes),
    }
    if as_json:
        emit_json(report)
    else:
        _print_run(report, dry_run=dry_run)
    if not report["ok"]:
        raise SystemExit(ExitStatus.FAILED)


def _print_run(report: dict[str, Any], *, dry_run: bool) -> None:
    """Each step's outcome, then each item it changed (or would change) and how."""
    title = "maintain (dry run: nothing written)" if dry_run else f"maintain run {report['run_id']}"
    console.print(f"[bold]{title}[/]")
    for step in report["steps"]:
        style = _STYLE.get(step["outcome"], "")
        line = step["error"] or step["detail"] or ""
        outcome = f"[{style}]{step['outcome']}[/]" if style else step["outcome"]
        console.print(f"  {step['name']}: {outcome}" + (f": {escape(line)}" if line else ""))
        for change in report["changes"]:
            if change["step"] == step["name"]:
                would = "would be " if dry_run and change["action"] != "asked" else ""
                console.print(Text(f"    {change['ref']}: {would}{change['change']}"))
    items = len({c["ref"] for c in report["changes"]})
    if items:
        counts: dict[str, int] = {}
        for per_step in report["counts"].values():
            for action, n in per_step.items():
                counts[action] = counts.get(action, 0) + n
        summary = ", ".join(f"{n} {action}" for action, n in sorted(counts.items()))
        console.print(f"{items} item(s): {summary}")
    if not dry_run:
        console.print("ok" if report["ok"] else f"[red]failed:[/] {escape(report['error'])}")
