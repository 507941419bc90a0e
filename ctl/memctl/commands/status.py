"""`memctl status`: every component of a project's memory, or of every project of an inventory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from .._errors import ExitStatus
from ..operations._status import inventory_status, project_status
from ..provision._project import current_project
from ._options import project_option
from ._output import console, emit_json, json_option
from ._runs import chosen_inventory, registered_project
from ._tables import Column, fitted_table


def _health(ok: bool, error: str | None = None) -> str:
    return "[green]ok[/]" if ok else f"[red]{escape(error or 'failing')}[/]"


def _print_project(report: dict[str, Any]) -> None:
    title = f"{report.get('slug') or report['project']}"
    if "error" in report:
        where = f" on {report['machine']}" if report.get("machine") else ""
        console.print(f"[bold]{escape(title)}[/]{escape(where)}: [red]{escape(report['error'])}[/]")
        return
    rows: list[tuple[str, str, str]] = []
    for store in report["stores"]:
        detail = f"{store.get('documents', '-')} documents, {store['url']}"
        rows.append(
            (f"{store['store']} store", _health(store["healthy"], store.get("error")), escape(detail))
        )
    if "outbox" in report:
        box = report["outbox"]
        detail = f"{box['pending']} pending, {box['dead_lettered']} dead-lettered" + (
            f" (last error: {box['last_error']})" if box["last_error"] else ""
        )
        if box["dead_lettered"]:
            detail += "; see memctl outbox list"
        rows.append(("writes waiting for Dify", _health(not box["dead_lettered"]), escape(detail)))
    capture = report["capture"]
    box = capture["outbox"]
    rows.append(
        (
            "capture",
            "skipped" if capture["skipped"] else capture["provider"],
            "no capture provider configured (set capture_provider)"
            if capture["skipped"]
            else f"{box['pending']} documents waiting, {box['failed']} failed",
        )
    )
    last = capture["last_compile"]
    rows.append(("last compile", "", escape(_compile_text(last)) if last else "never"))
    job = report["maintenance"]
    success, failure = job["last_success_at"] or "never", job["last_failure_at"] or "never"
    runs = f"last success {success}, last failure {failure}"
    rows.append(("maintenance", _health(job["healthy"], "failing"), escape(runs)))
    for escalation in job["open_escalations"]:
        detail = f"{escalation['failures']} failures since {escalation['opened_at']}: {escalation['report']}"
        rows.append(("open escalation", f"[red]{escape(escalation['signature'])}[/]", escape(detail)))
    for client in report["clients"]:
        detail = f"{client['command']}: " + (f"{client['tools']} tools" if client["ok"] else client["error"])
        rows.append((", ".join(client["files"]), _health(client["ok"], "cannot start"), escape(detail)))
    if "bridge" in report:
        bridge = report["bridge"]
        running = f"{bridge.get('image')} ({bridge.get('image_id')}), since {bridge.get('started_at')}"
        detail = bridge.get("error") or running
        health = "[green]healthy[/]" if bridge["health"] == "healthy" else f"[red]{bridge['health']}[/]"
        rows.append((f"bridge {bridge['container']}", health, escape(detail)))
    versions = report["versions"]
    schemas = ", ".join(
        f"{kind} {s['version'] if s['version'] is not None else 'not created'}/{s['latest']}"
        for kind, s in versions["schemas"].items()
    )
    stack = ", ".join(f"{k} {versions[k]}" for k in ("bridge", "valkey", "dify") if versions.get(k))
    text = f"memctl {versions['memctl']}; schema {schemas or '-'}" + (f"; {stack}" if stack else "")
    rows.append(("versions", "", escape(text)))
    rows.append(("embedding model", "", str(report["embedding_model"])))
    columns = (Column("component"), Column("health"), Column("detail"))
    console.print(fitted_table(f"{title} ({report['mode']}, scope {report['scope']})", columns, rows))


def _compile_text(last: Any) -> str:
    if not isinstance(last, dict):
        return str(last)
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted((last.get("counts") or {}).items()))
    stopped = f"; stopped: {last['stopped']}" if last.get("stopped") else ""
    return f"{last.get('at')}: {counts or 'no atoms'}{stopped}"


@click.command()
@project_option
@click.option("--inventory", type=click.Path(path_type=Path), help="Every project of this inventory instead.")
@click.option("--all", "every", is_flag=True, help="Every project registered with `memctl projects add`.")
@json_option
def status(project: Path | None, inventory: Path | None, every: bool, as_json: bool) -> None:
    """Show every component of a project's memory, or of every project of an inventory.

    For each project: each store's health and size, writes waiting for Dify, the
    capture pipeline (provider, documents waiting for the store, last compile), the
    maintenance job (last success, last failure, open escalations: see `memctl maintain`),
    the versions (memctl, the embedded stores' schema versions) and, for a stack project,
    its bridge container's health and the bridge image, Valkey image and Dify release it
    runs with (from Docker). Projects of an inventory that live on machines reached over
    SSH are probed there, by the memctl installed on them (memctl up installs it); one that
    cannot be reached is reported with the reason. Nothing is changed.

    Exit code 0 when every store answers, no queued write is dead-lettered and every
    bridge container is healthy; 5 otherwise.

    \b
    Example:
      memctl status
      memctl status --project ~/src/app --json
      memctl status --all
    """
    target = chosen_inventory(project, inventory, every)
    if target is None:
        report = project_status(registered_project(current_project(project)))
    else:
        report = inventory_status(target)
    if as_json:
        emit_json(report)
    else:
        for record in report.get("projects", [report]):
            _print_project(record)
    if not report["ok"]:
        raise SystemExit(ExitStatus.UNAVAILABLE)
