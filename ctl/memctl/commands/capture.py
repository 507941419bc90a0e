"""`memctl hook`, `memctl flush`, `memctl compile` and `memctl capture status`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import click
from rich.markup import escape
from rich.text import Text

from memory_bridge import ConfigError

from .._errors import ExitStatus
from .._timefmt import iso_time
from ..capture import _front
from ..capture._paths import CaptureDirs
from ..provision._project import provisioned_settings
from ._options import project_option
from ._output import console, emit_json, json_option
from ._tables import Column, fitted_table


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("event", metavar="EVENT")
@click.argument("signature", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project directory (default: $CLAUDE_PROJECT_DIR, else the nearest directory with .memory/ "
    "above the session's cwd).",
)
@json_option
def hook(event: str, signature: tuple[str, ...], project: Path | None, as_json: bool) -> None:
    """Run one client lifecycle hook, reading the client's JSON on stdin.

    EVENT is session-start, pre-compact, post-compact, session-end or exit-plan-mode.
    The hook stages the work and hands it to a detached worker, so it returns at once;
    it always exits 0, and a problem is one line on stderr (the session goes on).
    session-start prints context for the agent and starts the day's compile once.
    Words after EVENT from a `#` on (the `# memctl-hook-v1` signature) are ignored.

    \b
    Example:
      echo '{"session_id":"s1","transcript_path":"/tmp/s1.jsonl"}' | memctl hook session-end
      memctl hook session-start --project ~/src/app
    """
    argv = [event, *(["--project", str(project)] if project else []), *(["--json"] if as_json else [])]
    sys.exit(_front.main(argv + list(signature)))


def _provider(settings: Any) -> Any:
    from ..capture._llm import make_provider
    from ..capture._worker import NO_PROVIDER

    provider = make_provider(settings)
    if provider is None:
        raise ConfigError(f"capture is off: {NO_PROVIDER}")
    return provider


@click.command()
@project_option
@click.option(
    "--transcript",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The session's transcript (Claude Code or Codex JSONL).",
)
@click.option("--session-id", help="Session id (default: the transcript's file name without .jsonl).")
@click.option(
    "--event",
    default="manual",
    show_default=True,
    help="The hook event recorded with the daily document.",
)
@json_option
def flush(project: Path | None, transcript: Path, session_id: str | None, event: str, as_json: bool) -> None:
    """Distil a session's new turns into a daily document, in the foreground.

    Only turns after the session's high-water mark are sent to the capture LLM, so a
    second flush of the same transcript sends nothing. A store that cannot be reached
    keeps the document queued; the next capture run delivers it.

    Exit code 0 when done (or nothing new), 2 for bad settings, 13 when the LLM could
    not answer, 14 when its answer broke the schema (nothing is written then), 15 when
    another flush of the session held its lock throughout.

    \b
    Example:
      memctl flush --transcript ~/.claude/projects/app/1234.jsonl
      memctl flush --project ~/src/app --transcript session.jsonl --json
    """
    from ..capture._flush import flush as run_flush

    settings = provisioned_settings(project)
    provider = _provider(settings)
    result = anyio.run(
        lambda: run_flush(
            settings,
            provider,
            session_id=session_id or transcript.name.removesuffix(".jsonl"),
            transcript=transcript.absolute(),
            event=event,
            lock_wait=settings.capture.timeout_seconds * (settings.capture.retries + 1) + 60,
        )
    )
    report = {"ok": result.outcome != "busy", **result.to_dict()}
    if as_json:
        emit_json(report)
    else:
        console.print(f"flush {result.session_id}: [bold]{result.outcome}[/] ({result.turns} new turns)")
        if result.daily:
            console.print(f"{result.atoms} atoms in daily/{result.daily}")
        for problem in result.dropped:
            console.print(f"[yellow]dropped[/] {escape(problem)}")
        if result.queued:
            console.print(
                f"[yellow]{result.queued} documents wait for the store:[/] {escape(str(result.store_error))}"
            )
    if result.outcome == "busy":
        raise SystemExit(ExitStatus.LOCKED)


@click.command(name="compile")
@project_option
@click.option("--dry-run", is_flag=True, help="Report what would happen; ask no LLM, write nothing.")
@json_option
def compile_(project: Path | None, dry_run: bool, as_json: bool) -> None:
    """Merge the atoms of daily documents into knowledge and lessons.

    A lesson with the same scope and error_pattern as an existing one updates it; an
    atom with near-duplicates (by embedding similarity) goes to the capture LLM for
    create, update or skip; any other atom becomes a new document. Compiled dailies
    are disabled after capture_daily_retention_days.

    Exit code 0 when every atom landed (or another compile holds the lock), 1 when
    some atoms failed (the rest landed), 2 for bad settings, 5 when the store could not
    be reached (the run resumes next time).

    \b
    Example:
      memctl compile --dry-run
      memctl compile --project ~/src/app --json
    """
    from ..capture._compile import compile_project

    settings = provisioned_settings(project)
    provider = None if dry_run else _provider(settings)
    report = anyio.run(lambda: compile_project(settings, provider, dry_run=dry_run))
    payload = report.to_dict()
    if as_json:
        emit_json(payload)
    else:
        _print_compile(payload)
    if report.stopped:
        raise SystemExit(ExitStatus.UNAVAILABLE)
    if report.errors:
        raise SystemExit(ExitStatus.FAILED)


_ATOM_FIELDS = ("daily", "type", "title", "action", "target", "reason")


def _print_compile(report: dict[str, Any]) -> None:
    if report["skipped"]:
        console.print(f"compile skipped: {report['skipped']}")
        return
    title = "compile (dry run: nothing written)" if report["dry_run"] else "compile"
    columns = (
        Column("daily", drop=2),
        Column("type", drop=1),
        Column("title"),
        Column("action", whole=True),
        Column("target"),
        Column("reason", drop=3),
    )
    rows = [
        [Text(str(atom[k]), style="red" if atom["action"] == "error" else "") for k in _ATOM_FIELDS]
        for atom in report["atoms"]
    ]
    console.print(fitted_table(f"{title}: {report['dailies']} daily documents", columns, rows))
    counts = ", ".join(f"{n} {action}" for action, n in sorted(report["counts"].items())) or "no atoms"
    console.print(f"{counts}; compiled {len(report['compiled'])}, retired {len(report['retired'])} dailies")
    if report["degraded"]:
        console.print(f"[yellow]near-duplicates by name only:[/] {escape(str(report['degraded']))}")
    if report["stopped"]:
        console.print(f"[red]stopped:[/] {escape(str(report['stopped']))}")


def capture_status_report(project: Path | None) -> dict[str, Any]:
    from ..capture._compile import load_state
    from ..capture._lock import lock_owner
    from ..capture._log import read_events
    from ..capture._outbox import queued
    from ..capture._worker import NO_PROVIDER

    settings = provisioned_settings(project)
    dirs = CaptureDirs(settings.project)
    pending, failed = queued(dirs)
    state = load_state(dirs)
    owner = lock_owner(dirs.compile_lock)
    sessions = list(dirs.sessions.glob("*.json")) if dirs.sessions.is_dir() else []
    enabled = settings.capture.provider != "none"
    return {
        "project": str(settings.project),
        "provider": settings.capture.provider,
        "enabled": enabled,
        "note": None if enabled else f"capture is skipped: {NO_PROVIDER}",
        "outbox": {"pending": pending, "failed": failed},
        "sessions": len(sessions),
        "compile": {
            "last_attempted_date": state.get("last_attempted_date"),
            "last_run": state.get("last_run"),
            "compiled_dailies": len(state["compiled"]),
            "running_pid": owner.get("pid") if owner else None,
        },
        "recent": read_events(dirs.log, 10),
        "worker_errors": dirs.worker_errors.is_file() and dirs.worker_errors.stat().st_size > 0,
    }


@click.group()
def capture() -> None:
    """The capture pipeline: what hooks distilled, what waits, when compile ran.

    \b
    Example:
      memctl capture status
    """


@capture.command(name="status")
@project_option
@json_option
def capture_status(project: Path | None, as_json: bool) -> None:
    """Show the capture pipeline: provider, queued documents, sessions, compile, recent events.

    \b
    Example:
      memctl capture status
      memctl capture status --project ~/src/app --json
    """
    report = capture_status_report(project)
    if as_json:
        emit_json(report)
        return
    console.print(f"capture: {report['project']}")
    console.print(
        f"provider: {report['provider']}" + (f" ([yellow]{report['note']}[/])" if report["note"] else "")
    )
    box = report["outbox"]
    console.print(f"documents waiting for the store: {box['pending']} pending, {box['failed']} failed")
    console.print(f"sessions with a high-water mark: {report['sessions']}")
    run = report["compile"]
    console.print(
        f"compile: last attempted {run['last_attempted_date'] or 'never'}, "
        f"{run['compiled_dailies']} dailies compiled"
        + (f", running (pid {run['running_pid']})" if run["running_pid"] else "")
    )
    if report["worker_errors"]:
        errors = CaptureDirs(Path(report["project"])).worker_errors
        console.print(f"[red]the worker wrote errors:[/] see {errors}")
    columns = (
        Column("time", whole=True),
        Column("event"),
        Column("hook", drop=1),
        Column("outcome"),
        Column("detail", drop=2),
    )
    rows = []
    for event in report["recent"]:
        detail = event.get("reason") or event.get("daily") or event.get("name") or event.get("job") or ""
        outcome = event.get("outcome") or event.get("action") or ""
        when = iso_time(str(event.get("ts", ""))) or ""
        rows.append((when, event.get("event", ""), str(event.get("hook", "")), outcome, Text(str(detail))))
    console.print(fitted_table("recent events", columns, rows))
