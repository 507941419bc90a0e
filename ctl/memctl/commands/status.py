"""`memctl status`: every component of a project's memory, or of every project of an inventory."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import click
from rich.markup import escape

from memory_bridge import ConfigError, Settings, StoreError
from memory_bridge.core import cron_health
from memory_bridge.stores import EntryStore, KnowledgeStore, VersionedKnowledgeStore, open_stores
from memory_bridge.stores.dify import DurableKnowledgeStore

from .._containers import bridge_container
from .._errors import ExitStatus, PlaybookFailed
from .._inventory import Inventory, Project
from .._options import project_option
from .._output import console, emit_json, json_option
from .._project import current_project, provisioned_settings
from .._proof import prove
from .._provision import failed_projects, limited, provision
from .._stores import embedded_states
from .._tables import Column, fitted_table
from .._timefmt import iso_time
from .._user_files import files_of
from ..capture._compile import load_state
from ..capture._outbox import queued
from ..capture._paths import CaptureDirs
from ._runs import chosen_inventory, registered_project


async def _probe(name: str, url: str, ping: Any, count: Any) -> dict[str, Any]:
    try:
        with anyio.fail_after(5):
            await ping()
            return {"store": name, "url": url, "healthy": True, "documents": await count()}
    except (StoreError, TimeoutError) as exc:
        return {"store": name, "url": url, "healthy": False, "error": str(exc) or "timed out"}


async def components(settings: Settings, entries: EntryStore, knowledge: KnowledgeStore) -> dict[str, Any]:
    """The stores' health and size, writes waiting for Dify and the capture pipeline."""
    report: dict[str, Any] = {
        "stores": [
            await _probe("entries", entries.url, entries.ping, entries.count),
            await _probe("knowledge", knowledge.url, knowledge.ping, knowledge.count),
        ],
    }
    dirs = CaptureDirs(settings.project)
    pending, failed = queued(dirs)
    state = load_state(dirs)
    report["capture"] = {
        "provider": settings.capture_provider,
        "skipped": settings.capture_provider == "none",
        "outbox": {"pending": pending, "failed": failed},
        "last_compile": _last_compile(state.get("last_run")),
        "last_compile_attempted": state.get("last_attempted_date"),
    }
    report["maintenance"] = maintenance_status(settings.project)
    if isinstance(knowledge, VersionedKnowledgeStore):
        versions, documents = await knowledge.log.size()
        report["document_versions"] = {"versions": versions, "documents": documents}
        knowledge = knowledge.inner
    if isinstance(knowledge, DurableKnowledgeStore):
        box = dict(await knowledge.outbox.status())
        report["outbox"] = {**box, "oldest": iso_time(box["oldest"])}
    return report


def _last_compile(run: Any) -> Any:
    """The capture state's last compile run, its time in ISO 8601."""
    return {**run, "at": iso_time(run.get("at"))} if isinstance(run, dict) else run


async def collect(project: Path | None) -> dict[str, Any]:
    """One project's stores, outboxes, capture, schema versions (what needs no Docker)."""
    settings = provisioned_settings(project)
    async with open_stores(settings) as (entries, knowledge):
        report: dict[str, Any] = {
            "project": str(settings.project),
            "scope": settings.project_scope,
            "embedding_model": "none"
            if settings.embedding_model == "none"
            else settings.embedding_url or settings.embedding_model,
            **await components(settings, entries, knowledge),
        }
        report["versions"] = {
            "memctl": version("memctl"),
            "schemas": {
                state.kind: {"version": state.version, "latest": state.latest}
                for state in embedded_states(settings)
            },
        }
        report["clients"] = [
            {"files": list(p.files), "command": p.command, "ok": p.ok, "tools": p.tools, "error": p.error}
            for p in await prove(settings.project, "memory", files_of(settings.project))
        ]
        report["ok"] = (
            all(s["healthy"] for s in report["stores"])
            and not report.get("outbox", {}).get("dead_lettered")
            and all(c["ok"] for c in report["clients"])
        )
        return report


def maintenance_status(project: Path) -> dict[str, Any]:
    """The maintenance job: last success, last failure, open escalations (from its records)."""
    health = cron_health(project, limit=1)
    return {
        "healthy": health["healthy"],
        "summary": health["summary"],
        "last_success_at": iso_time(health["lastSuccessAt"]),
        "last_failure_at": iso_time(health["lastFailureAt"]),
        "open_escalations": [
            {k: e.get(k) for k in ("signature", "failures", "last_error", "report")}
            | {"opened_at": iso_time(e.get("opened_at"))}
            for e in health["escalations"]
            if e.get("status") == "open"
        ],
    }


def project_status(project: Project) -> dict[str, Any]:
    """A project on this machine: `collect`, plus its bridge container in stack mode."""
    report: dict[str, Any] = {"slug": project.slug, "mode": project.mode}
    report.update(anyio.run(collect, Path(project.workspace).expanduser()))
    if project.mode == "stack":
        bridge = bridge_container(project.slug)
        bridge["started_at"] = iso_time(bridge.get("started_at"))
        report["versions"].update(bridge.pop("versions", {}))
        report["bridge"] = bridge
        report["ok"] = report["ok"] and bridge["health"] == "healthy"
    return report


def problems(report: dict[str, Any]) -> list[str]:
    """What keeps a project's status report from being healthy, one phrase each."""
    if "error" in report:
        return [report["error"]]
    found = [f"{s['store']} store: {s.get('error', 'failing')}" for s in report["stores"] if not s["healthy"]]
    if dead := report.get("outbox", {}).get("dead_lettered"):
        found.append(f"{dead} writes to Dify dead-lettered")
    found += [f"{', '.join(c['files'])}: {c['error']}" for c in report["clients"] if not c["ok"]]
    if "bridge" in report and report["bridge"]["health"] != "healthy":
        found.append(f"bridge container {report['bridge']['container']}: {report['bridge']['health']}")
    return found


def _remote_status(inventory: Inventory) -> dict[str, dict[str, Any]]:
    """Each project on the machines reached over SSH, reported there (playbooks/status.yml);
    a machine that cannot be reached gives each of its projects an error saying why."""
    remote = tuple(machine.name for machine in inventory.machines if not machine.local)
    if not remote:
        return {}
    try:
        _, run = provision(inventory, playbook="status", check=False, diff=False, limit=remote)
    except PlaybookFailed as failed:
        run = failed.run
    reports = {
        r["host"]: r["report"]["status"] for r in run.results if r["status"] == "ok" and r.get("report")
    }
    for slug, reason in failed_projects(limited(inventory, remote), run).items():
        reports.setdefault(slug, {"ok": False, "error": reason})
    return reports


def inventory_status(inventory: Inventory) -> dict[str, Any]:
    """Every project of the inventory: those of this machine probed here, those of machines
    reached over SSH probed there."""
    remote = _remote_status(inventory)
    projects = []
    for machine, project in inventory.projects:
        if not machine.local:
            report = remote.get(project.slug, {"ok": False, "error": "not reported"})
            projects.append({"machine": machine.name, "slug": project.slug, "mode": project.mode, **report})
            continue
        try:
            report = project_status(project)
        except (ConfigError, StoreError) as exc:  # this project's; the others are still shown
            report = {"slug": project.slug, "mode": project.mode, "ok": False, "error": str(exc)}
        projects.append({"machine": machine.name, **report})
    return {"ok": all(p["ok"] for p in projects), "inventory": str(inventory.path), "projects": projects}


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
