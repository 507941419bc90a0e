"""The maintenance job `memctl maintain` runs (by hand, or from the timer `up --schedule` installs).

A run takes the project's maintenance lock, then runs its steps in order, each in its own
process group with a time limit: compile of the captured sessions first, then the
maintenance passes. The passes run in this process, each within the step time limit: those
that need no LLM (`memory_bridge.maintenance.run_passes`, `flag_similar`), those that ask the
capture LLM (`run_llm_passes` with `_maintain_llm`'s judge; skipped without a provider),
and entry compaction (`_compact`, last). Every run that is not a dry run writes one
redacted record (`memory_bridge.maintenance.record_run`), which `memctl status` and the
`cron_health` tool read, and, beside it, every document's and entry's state before the run
changed it (`undo/<run>.json`, not redacted: it is what `--undo` writes back).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil

from memory_bridge import ConfigError, InvalidInput, NotFound, Settings, write_atomically
from memory_bridge.core import redact
from memory_bridge.maintenance import (
    LLM_PASSES,
    NO_LLM_PASSES,
    SIMILARITY_PASS,
    THIN_PASS,
    NearDuplicates,
    PassReport,
    RunRecord,
    StepRecord,
    flag_similar,
    last_success_at,
    maintain_dir,
    record_run,
    run_llm_passes,
    run_passes,
    thin_versions,
    undo_changes,
)
from memory_bridge.stores import KnowledgeStore, make_embedder, open_knowledge_store

from .._errors import MaintenanceLocked
from .._refs import document_ref, entry_ref
from ..capture._lock import FileLock, lock_owner
from ..provision._launcher import installed_command
from . import _compact
from ._maintain_llm import LlmJudge, make_judge

__all__ = [
    "INTERVALS",
    "PASSES",
    "Pass",
    "chosen_passes",
    "due",
    "run_maintenance",
    "undo_run",
]

INTERVALS = {"hourly": 3600.0, "daily": 86400.0}
"""How often each schedule runs the job; `--if-due` skips until 90% of it has passed."""

_DUE_FRACTION = 0.9  # a timer fires a little early or late: an hourly run 59 minutes on is due


@dataclass(frozen=True)
class Pass:
    """A step of the job, in the order it runs."""

    name: str
    summary: str


# run on one store, in PASSES' order
_STORE_PASSES = (*NO_LLM_PASSES, SIMILARITY_PASS, *LLM_PASSES, THIN_PASS)

PASSES: tuple[Pass, ...] = (
    Pass("compile", "merge the atoms of captured sessions into knowledge and lessons"),
    Pass("dedupe-by-sha256", "archive documents whose body is identical to a newer one"),
    Pass("dedupe-by-lesson-key", "archive lessons with the same module, task and error pattern"),
    Pass(SIMILARITY_PASS, "flag near-duplicate documents by embedding similarity"),
    Pass("llm-merge-near-duplicates", "let the capture LLM merge or keep near-duplicates"),
    Pass("staleness-flag", "flag lessons neither recalled nor created within the window"),
    Pass("llm-semantic-refresh", "let the capture LLM keep, rewrite or archive stale documents"),
    Pass("compress-archived", "truncate the bodies of long-archived documents"),
    Pass(THIN_PASS, "keep one version a day of old document versions (document_versions_thin_after_days)"),
    Pass(_compact.NAME, "link entries that name each other: backlink blocks and stubs"),
)


def chosen_passes(names: str) -> list[Pass]:
    """The passes of a comma-separated list (`all`: every one), in the job's order."""
    wanted = {n.strip() for n in names.split(",") if n.strip()}
    if "all" in wanted:
        return list(PASSES)
    unknown = sorted(wanted - {p.name for p in PASSES})
    if unknown or not wanted:
        problem = f"unknown pass {', '.join(unknown)}" if unknown else "no pass named"
        raise ValueError(f"{problem}; the passes are all, {', '.join(p.name for p in PASSES)}")
    return [p for p in PASSES if p.name in wanted]


def due(project: Path, schedule: str | None, now: float) -> tuple[bool, float | None]:
    """Whether a run is due under `schedule` (none or off: daily), and the last success."""
    last = last_success_at(project)
    interval = INTERVALS.get(schedule or "daily", INTERVALS["daily"])
    return last is None or now - last >= interval * _DUE_FRACTION, last


Runner = Callable[[list[str], float], tuple[int, str, str]]


def run_process(argv: list[str], timeout: float) -> tuple[int, str, str]:
    """Run `argv` in its own process group; on `timeout`, kill the whole group and raise."""
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(child.pid)
            child.communicate()
            raise
        return child.returncode, out, err


def _kill_tree(pid: int) -> None:
    """Kill a step and everything it started, also what runs in a session of its own (the
    capture LLM CLI does), which its process group does not reach."""
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]  # found by parent, before any is orphaned
    except psutil.NoSuchProcess:
        tree = []
    with suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    for process in tree:
        with suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(tree, timeout=5)


def _compile_detail(payload: dict[str, Any]) -> str:
    """One line from `memctl compile --json`'s report."""
    if payload.get("skipped"):
        return f"skipped: {payload['skipped']}"
    counts, compiled = payload.get("counts"), payload.get("compiled")
    pairs = sorted(counts.items()) if isinstance(counts, dict) else []
    atoms = ", ".join(f"{n} {a}" for a, n in pairs) or "no atoms"
    done = len(compiled) if isinstance(compiled, list) else 0
    return f"{payload.get('dailies', 0)} daily documents: {atoms}; compiled {done}"


def _compile_error(code: int, out: str, err: str) -> str:
    try:
        payload = json.loads(out)
    except ValueError:
        payload = {}
    if isinstance(payload, dict):
        if payload.get("message"):
            return str(payload["message"])
        if payload.get("stopped"):
            return f"stopped: {payload['stopped']}"
        errors = [a for a in payload.get("atoms", []) if isinstance(a, dict) and a.get("action") == "error"]
        if errors:
            return f"{len(errors)} atoms failed, first: {errors[0].get('reason', '')}"
    lines = [line for line in err.splitlines() if line.strip()]
    return lines[-1] if lines else f"exited with code {code}"


def _compile(settings: Settings, *, dry_run: bool, timeout: float, runner: Runner) -> StepRecord:
    if settings.capture.provider == "none" and not dry_run:
        return StepRecord("compile", "skipped", detail="capture is off (capture_provider = none)")
    argv = [*installed_command(), "compile", "--project", str(settings.project), "--json"]
    argv += ["--dry-run"] if dry_run else []
    started = time.monotonic()
    try:
        code, out, err = runner(argv, timeout)
    except subprocess.TimeoutExpired:
        seconds = time.monotonic() - started
        return StepRecord("compile", "timeout", seconds, error=f"timed out after {timeout:g} s")
    seconds = round(time.monotonic() - started, 3)
    if code != 0:
        return StepRecord("compile", "failed", seconds, error=_compile_error(code, out, err), exit_code=code)
    try:
        payload = json.loads(out)
    except ValueError:
        payload = {}
    detail = _compile_detail(payload) if isinstance(payload, dict) else ""
    return StepRecord("compile", "dry-run" if dry_run else "ok", seconds, detail=detail, exit_code=0)


_RUN_ID = re.compile(r"[0-9a-f]{12}")


def _undo_path(project: Path, run_id: str) -> Path:
    return maintain_dir(project) / "undo" / f"{run_id}.json"


async def _one_pass(
    store: KnowledgeStore,
    settings: Settings,
    name: str,
    judge: LlmJudge | None,
    *,
    dry_run: bool,
    changes: list[dict[str, Any]],
) -> PassReport:
    """One store pass; an LLM one with `judge`."""
    common: dict[str, Any] = {
        "scope": settings.project_scope,
        "policies": settings.maintain.consolidate_policies,
        "stale_after_months": settings.maintain.consolidate_stale_after_months,
        "now": time.time(),
        "dry_run": dry_run,
        "changes": changes,
    }
    options = NearDuplicates(
        settings.maintain.consolidate_similarity_threshold,
        settings.maintain.consolidate_cluster_top_k,
        settings.maintain.consolidate_refresh_max_per_run,
    )
    if name == THIN_PASS:
        days = settings.retention.document_versions_thin_after_days
        report = await thin_versions(store, days=days, now=common["now"], dry_run=dry_run)
    elif name == SIMILARITY_PASS:
        report = await flag_similar(
            store,
            scope=settings.project_scope,
            policies=settings.maintain.consolidate_policies,
            options=options,
        )
    elif name in LLM_PASSES and judge is not None:
        (report,) = await run_llm_passes(store, [name], judge, options=options, **common)
    else:
        archive_age_days = settings.maintain.consolidate_archive_age_days
        (report,) = await run_passes(store, [name], archive_age_days=archive_age_days, **common)
    return report


async def _store_passes(
    settings: Settings,
    names: list[str],
    *,
    dry_run: bool,
    timeout: float,
    changes: list[dict[str, Any]],
    actions: dict[str, list[dict[str, Any]]],
) -> list[StepRecord]:
    """The store passes, one after the other on the project's store; the documents changed
    are added to `changes` (their state before) as they change."""
    # the near-duplicate merge searches by vector: the store gets the model (loaded on first use)
    embedder = make_embedder(settings) if set(names) & {SIMILARITY_PASS, *LLM_PASSES} else None
    store = open_knowledge_store(settings, embedder)
    steps = []
    judge: LlmJudge | None = None
    try:
        for name in names:
            started = time.monotonic()
            if name in LLM_PASSES:
                try:
                    judge = judge or make_judge(settings)
                except ConfigError as exc:
                    steps.append(StepRecord(name, "failed", error=str(exc)))
                    continue
                if judge is None:
                    detail = "no LLM: capture is off (capture_provider = none); nothing asked or changed"
                    steps.append(StepRecord(name, "skipped", detail=detail))
                    continue
            try:
                with anyio.fail_after(timeout):
                    report = await _one_pass(store, settings, name, judge, dry_run=dry_run, changes=changes)
            except TimeoutError:
                seconds = round(time.monotonic() - started, 3)
                steps.append(StepRecord(name, "timeout", seconds, error=f"timed out after {timeout:g} s"))
                continue
            seconds = round(time.monotonic() - started, 3)
            actions[name] = report.actions
            if report.skipped and not report.actions and not report.errors:
                steps.append(StepRecord(name, "skipped", seconds, detail="; ".join(report.skipped)))
            elif report.errors:
                error = "; ".join(report.errors)
                steps.append(StepRecord(name, "failed", seconds, detail=report.detail, error=error))
            else:
                detail = ("would: " if dry_run else "") + report.detail
                steps.append(StepRecord(name, "dry-run" if dry_run else "ok", seconds, detail=detail))
    finally:
        await store.close()
    return steps


def run_maintenance(
    settings: Settings,
    passes: list[Pass],
    *,
    dry_run: bool,
    trigger: str,
    step_timeout: float,
    compact_budget: float | None = None,
    runner: Runner | None = None,
) -> dict[str, Any]:
    """One run of the chosen passes, its record (redacted) and each pass's actions; raises
    `MaintenanceLocked` when another run holds the lock. A dry run takes no lock and writes
    nothing; any other run writes its record and what it changed before it lets the lock go."""
    lock = FileLock(maintain_dir(settings.project) / "maintain.lock", "maintain")
    if not dry_run and not lock.acquire():
        owner = lock_owner(lock.path) or {}
        raise MaintenanceLocked(
            f"another maintenance run of {settings.project} holds the lock (pid {owner.get('pid', '?')}); "
            "nothing was done"
        )
    run = RunRecord(uuid.uuid4().hex[:12], time.time(), 0.0, trigger)
    changes: list[dict[str, Any]] = []
    entry_changes: list[dict[str, Any]] = []
    actions: dict[str, list[dict[str, Any]]] = {}
    try:
        store_passes = [p.name for p in passes if p.name in _STORE_PASSES]
        for step in passes:
            if step.name == "compile":
                done = _compile(settings, dry_run=dry_run, timeout=step_timeout, runner=runner or run_process)
                run.steps.append(done)
            elif step.name in _STORE_PASSES:
                if step.name == store_passes[0]:
                    run.steps += anyio.run(
                        lambda: _store_passes(
                            settings,
                            store_passes,
                            dry_run=dry_run,
                            timeout=step_timeout,
                            changes=changes,
                            actions=actions,
                        )
                    )
            elif step.name == _compact.NAME:
                done = anyio.run(
                    lambda: _compact.compact_step(
                        settings,
                        dry_run=dry_run,
                        budget=settings.maintain.compact_budget_seconds
                        if compact_budget is None
                        else compact_budget,
                        timeout=step_timeout,
                        changes=entry_changes,
                        actions=actions,
                    )
                )
                run.steps.append(done)
        run.finished_at = time.time()
        shown = json.loads(redact(json.dumps(actions)))
        if dry_run:
            return {**json.loads(redact(json.dumps(run.to_dict()))), "dry_run": True, "actions": shown}
        return {**record_run(settings.project, run), "dry_run": False, "actions": shown}
    finally:
        if not dry_run:
            if changes or entry_changes:
                undo = {"run_id": run.run_id, "changes": changes, "entries": entry_changes}
                write_atomically(_undo_path(settings.project, run.run_id), json.dumps(undo), mode=0o600)
            lock.release()


def undo_run(settings: Settings, run_id: str) -> dict[str, Any]:
    """Write back every document and entry a run changed, as it was before the run (an entry
    written by someone since is left and named); the run's changes are then set aside
    (`<run>.undone.json`) so they are not written back twice."""
    if not _RUN_ID.fullmatch(run_id):
        raise InvalidInput("--undo", f"{run_id!r} is not a run id (12 hex digits, as maintain prints)")
    path = _undo_path(settings.project, run_id)
    if not path.is_file():
        raise NotFound(
            f"run {run_id} of {settings.project} changed no document or entry, was undone already, "
            "or never ran here"
        )
    undo = json.loads(path.read_text())
    changes, entry_changes = undo["changes"], undo.get("entries", [])
    lock = FileLock(maintain_dir(settings.project) / "maintain.lock", "maintain")
    if not lock.acquire():
        owner = lock_owner(lock.path) or {}
        raise MaintenanceLocked(
            f"another maintenance run of {settings.project} holds the lock (pid {owner.get('pid', '?')}); "
            "nothing was undone"
        )
    try:

        async def restore() -> int:
            store = open_knowledge_store(settings)
            try:
                return await undo_changes(store, changes)
            finally:
                await store.close()

        restored = anyio.run(restore) if changes else 0
        entries, left = _compact.undo_entries(settings, entry_changes) if entry_changes else (0, [])
        path.rename(path.with_suffix(".undone.json"))
    finally:
        lock.release()
    refs = [document_ref(str(c["slot"]), str(c["name"])) for c in changes]
    refs += [entry_ref(str(c["id"])) for c in entry_changes]
    return {
        "ok": True,
        "run_id": run_id,
        "restored": restored,
        "changed": len(changes),
        "entries_restored": entries,
        "entries_left": left,
        "items": list(dict.fromkeys(refs)),
    }
