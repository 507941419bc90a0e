"""A project's health: its stores, outboxes, capture pipeline, maintenance job and clients.

What `memctl status`, the web view and the Ansible collection's `project_status` report; no
printing here (commands/status.py prints it).
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio

from memory_bridge import ConfigError, Settings, StoreError
from memory_bridge.maintenance import cron_health
from memory_bridge.stores import EntryStore, KnowledgeStore, VersionedKnowledgeStore, open_stores
from memory_bridge.stores.dify import DurableKnowledgeStore

from .._errors import PlaybookFailed
from .._timefmt import iso_time
from ..capture._compile import load_state
from ..capture._outbox import queued
from ..capture._paths import CaptureDirs
from ..provision._inventory import Inventory, Project
from ..provision._project import provisioned_settings
from ..provision._proof import prove
from ..provision._provision import failed_projects, limited, provision
from ..provision._stores import embedded_states
from ..provision._user_files import files_of
from ._containers import bridge_container

__all__ = ["collect", "components", "inventory_status", "maintenance_status", "problems", "project_status"]


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
        "provider": settings.capture.provider,
        "skipped": settings.capture.provider == "none",
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
            if settings.embedding.model == "none"
            else settings.embedding.url or settings.embedding.model,
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
        "healthy": health.healthy,
        "summary": health.summary,
        "last_success_at": iso_time(health.lastSuccessAt),
        "last_failure_at": iso_time(health.lastFailureAt),
        "open_escalations": [
            {k: e.get(k) for k in ("signature", "failures", "last_error", "report")}
            | {"opened_at": iso_time(e.get("opened_at"))}
            for e in health.escalations
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
