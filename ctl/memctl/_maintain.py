"""The maintenance job `memctl maintain` runs (by hand, or from the timer `up --schedule` installs).

A run takes the project's maintenance lock, then runs its steps in order, each in its own
process group with a time limit: compile of the captured sessions first, then the
maintenance passes. A pass this memctl does not have yet is recorded as `unavailable`
with one line saying so, never as a result. Every run that is not a dry run writes one
redacted record (`memory_bridge.core.record_run`), which `memctl status` and the
`cron_health` tool read.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from memory_bridge import Settings
from memory_bridge.core import RunRecord, StepRecord, last_success_at, maintain_dir, record_run, redact

from ._errors import MaintenanceLocked
from ._launcher import installed_command
from .capture._lock import FileLock, lock_owner

__all__ = [
    "INTERVALS",
    "PASSES",
    "Pass",
    "chosen_passes",
    "due",
    "run_maintenance",
]

INTERVALS = {"hourly": 3600.0, "daily": 86400.0}
"""How often each schedule runs the job; `--if-due` skips until 90% of it has passed."""

_DUE_FRACTION = 0.9  # a timer fires a little early or late: an hourly run 59 minutes on is due


@dataclass(frozen=True)
class Pass:
    """A step of the job, in the order it runs; `available` False: not in this memctl yet."""

    name: str
    summary: str
    available: bool


PASSES: tuple[Pass, ...] = (
    Pass("compile", "merge the atoms of captured sessions into knowledge and lessons", True),
    Pass("dedupe-by-sha256", "archive documents whose body is identical to a newer one", False),
    Pass("dedupe-by-lesson-key", "archive lessons with the same module, task and error pattern", False),
    Pass("dedupe-by-similarity", "flag near-duplicate documents by embedding similarity", False),
    Pass("llm-merge-near-duplicates", "let the capture LLM merge or keep near-duplicates", False),
    Pass("staleness-flag", "flag lessons neither recalled nor created within the window", False),
    Pass("llm-semantic-refresh", "let the capture LLM keep, rewrite or archive stale documents", False),
    Pass("compress-archived", "truncate the bodies of long-archived documents", False),
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
    if settings.capture_provider == "none" and not dry_run:
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


def run_maintenance(
    settings: Settings,
    passes: list[Pass],
    *,
    dry_run: bool,
    trigger: str,
    step_timeout: float,
    runner: Runner | None = None,
) -> dict[str, Any]:
    """One run of the chosen passes, its record (redacted); raises `MaintenanceLocked` when
    another run holds the lock. A dry run takes no lock and writes nothing; any other run
    writes its record before it lets the lock go."""
    lock = FileLock(maintain_dir(settings.project) / "maintain.lock", "maintain")
    if not dry_run and not lock.acquire():
        owner = lock_owner(lock.path) or {}
        raise MaintenanceLocked(
            f"another maintenance run of {settings.project} holds the lock (pid {owner.get('pid', '?')}); "
            "nothing was done"
        )
    run = RunRecord(uuid.uuid4().hex[:12], time.time(), 0.0, trigger)
    try:
        for step in passes:
            if step.name == "compile":
                done = _compile(settings, dry_run=dry_run, timeout=step_timeout, runner=runner or run_process)
                run.steps.append(done)
            else:
                detail = f"not available yet in this memctl (it will {step.summary})"
                run.steps.append(StepRecord(step.name, "unavailable", detail=detail))
        run.finished_at = time.time()
        if dry_run:
            return {**json.loads(redact(json.dumps(run.to_dict()))), "dry_run": True}
        return {**record_run(settings.project, run), "dry_run": False}
    finally:
        if not dry_run:
            lock.release()
