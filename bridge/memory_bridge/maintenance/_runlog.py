"""The maintenance job's records: what `memctl maintain` writes, what `cron_health` reads.

Everything lives in the project's private `.memory/maintain/` directory (0700, files 0600):

- `runs.jsonl`: one slim line per run (the newest `KEEP_RUNS`), the run without its steps'
  output;
- `logs/YYYY/MM/run-<ms>.json`: the whole record of each run, redacted, pruned after
  `LOG_RETENTION_DAYS`;
- `state.json`: `last_success_at` and `last_run_at` (what `--if-due` reads);
- `escalations.json`: the current failure streak and every escalation, open or resolved;
- `issues/YYYY/MM/DD/<signature>.<version>.md`: one report per escalation.

A run that fails `ESCALATE_AFTER` times in a row with one error signature (the error with
ids, paths, timestamps, hex and numbers replaced, see `error_signature`) opens an
escalation; it stays open until a run ends without that signature (a success, or a failure
with another one), and is then marked resolved. The bridge reads these files and never
writes them; only the runner (memctl) writes, under its lock.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._files import MEMORY_DIR, private_dir, write_atomically
from ..core._redact import redact
from ..core._results import CronHealthResult

__all__ = [
    "ESCALATE_AFTER",
    "RunRecord",
    "StepRecord",
    "cron_health",
    "error_signature",
    "last_success_at",
    "maintain_dir",
    "record_run",
]

ESCALATE_AFTER = 3
KEEP_RUNS = 50
LOG_RETENTION_DAYS = 90
_SIGNATURE_LENGTH = 80

StepOutcome = Literal["ok", "failed", "timeout", "skipped", "unavailable", "dry-run"]


def maintain_dir(project: Path) -> Path:
    """`<project>/.memory/maintain`: the job's records (see the module docstring)."""
    return project / MEMORY_DIR / "maintain"


@dataclass
class StepRecord:
    """One step of a run: compile or a maintenance pass."""

    name: str
    outcome: StepOutcome
    seconds: float = 0.0
    detail: str = ""  # one line a person reads: counts, or why it was skipped
    error: str | None = None
    exit_code: int | None = None


@dataclass
class RunRecord:
    """One run of the job; `ok` when no step failed or timed out."""

    run_id: str
    started_at: float
    finished_at: float
    trigger: str  # "manual" or "schedule"
    steps: list[StepRecord] = field(default_factory=list)

    @property
    def failed(self) -> list[StepRecord]:
        return [s for s in self.steps if s.outcome in ("failed", "timeout")]

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def error(self) -> str | None:
        """The first failing step's error, prefixed with its step's name."""
        first = next(iter(self.failed), None)
        return None if first is None else f"{first.name}: {first.error or first.outcome}"

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        signature = error_signature(self.error) if self.error else None
        return {**record, "ok": self.ok, "error": self.error, "signature": signature}


_PLACEHOLDERS: tuple[tuple[str, str], ...] = (
    (r"\d{4}-\d\d-\d\d[t ]\d\d:\d\d(:\d\d(\.\d+)?)?(z|[+-]\d\d:?\d\d)?", "<ts>"),
    (r"\d{4}-\d\d-\d\d", "<date>"),
    (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<id>"),
    (r"(?:~|\.{1,2})?(?:/[\w.@+-]+)+/?", "<path>"),
    (r"\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b", "<hex>"),
    (r"\"[^\"]*\"|'[^']*'", "<str>"),
    (r"\d+(\.\d+)?", "<n>"),
)


def error_signature(error: str) -> str:
    """The error as a stable slug: redacted, lowercased, ids, paths, timestamps, hex,
    quoted strings and numbers replaced by placeholders, at most 80 characters."""
    text = redact(error).lower()
    for pattern, placeholder in _PLACEHOLDERS:
        text = re.sub(pattern, placeholder, text)
    slug = re.sub(r"[^a-z0-9<>]+", "-", text).replace("<", "").replace(">", "").strip("-")
    return slug[:_SIGNATURE_LENGTH].rstrip("-") or "unknown"


def _read_json(path: Path, default: Any) -> Any:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default
    return value if isinstance(value, type(default)) else default


def _read_runs(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    runs = []
    for line in lines:
        try:
            run = json.loads(line)
        except ValueError:
            continue  # a torn line is skipped, not fatal
        if isinstance(run, dict):
            runs.append(run)
    return runs


def _iso(ts: float | None) -> str | None:
    return None if ts is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _report_text(entry: dict[str, Any], record: dict[str, Any]) -> str:
    return (
        f"# Maintenance escalation: {entry['signature']}\n\n"
        f"- status: open\n- opened_at: {entry['opened_at']}\n"
        f"- consecutive failures: {entry['failures']}\n- last run: {record['run_id']}\n\n"
        f"## Last error\n\n```\n{entry['last_error']}\n```\n\n"
        "## What to do\n\n"
        "Run `memctl maintain` by hand to see the failing step, fix its cause, and the next run\n"
        "that does not fail this way marks this report resolved (`memctl status` lists it until then).\n"
    )


def _escalate(root: Path, record: dict[str, Any], now: float) -> None:
    """Track the failure streak; open an escalation at ESCALATE_AFTER, resolve stale ones."""
    index = _read_json(root / "escalations.json", {})
    streak = index.get("streak") if isinstance(index.get("streak"), dict) else {}
    known = [e for e in index.get("escalations") or [] if isinstance(e, dict)]
    entries = [e for e in known if {"signature", "status", "opened_at"} <= e.keys()]
    signature = record["signature"]
    if signature is None:
        streak = {}
    elif streak.get("signature") == signature:
        streak = {"signature": signature, "count": int(streak.get("count", 0)) + 1}
    else:
        streak = {"signature": signature, "count": 1}
    for entry in entries:
        if entry["status"] == "open" and entry["signature"] != signature:
            entry.update(status="resolved", resolved_at=_iso(now))
    current = next((e for e in entries if e["status"] == "open" and e["signature"] == signature), None)
    if current is not None:
        current.update(failures=streak["count"], last_error=record["error"], last_seen=_iso(now))
    elif signature is not None and streak["count"] >= ESCALATE_AFTER:
        version = 1 + sum(e["signature"] == signature for e in entries)
        day = time.strftime("%Y/%m/%d", time.gmtime(now))
        report = root / "issues" / day / f"{signature}.{version}.md"
        current = {
            "signature": signature,
            "version": version,
            "status": "open",
            "opened_at": _iso(now),
            "last_seen": _iso(now),
            "resolved_at": None,
            "failures": streak["count"],
            "last_error": record["error"],
            "report": str(report),
        }
        write_atomically(report, _report_text(current, record), mode=0o600)
        entries.append(current)
    index = {"streak": streak, "escalations": entries}
    write_atomically(root / "escalations.json", json.dumps(index, indent=1), mode=0o600)


def _prune_logs(logs: Path, now: float) -> None:
    cutoff = now - LOG_RETENTION_DAYS * 86400
    for old in logs.glob("*/*/run-*.json"):
        try:
            if old.stat().st_mtime < cutoff:
                old.unlink()
        except OSError:
            continue


def record_run(project: Path, run: RunRecord) -> dict[str, Any]:
    """Write one run's records (redacted) and update state and escalations; the record."""
    root = private_dir(maintain_dir(project))
    record: dict[str, Any] = json.loads(redact(json.dumps(run.to_dict())))
    now = run.finished_at
    log = root / "logs" / time.strftime("%Y/%m", time.gmtime(now)) / f"run-{int(now * 1000)}.json"
    write_atomically(log, json.dumps(record, indent=1), mode=0o600)
    slim = {k: v for k, v in record.items() if k != "steps"}
    slim["steps"] = {s["name"]: s["outcome"] for s in record["steps"]}
    slim["log"] = str(log)
    runs = [*_read_runs(root / "runs.jsonl"), slim][-KEEP_RUNS:]
    write_atomically(root / "runs.jsonl", "".join(json.dumps(r) + "\n" for r in runs), mode=0o600)
    state = _read_json(root / "state.json", {})
    state["last_run_at"] = now
    if run.ok:
        state["last_success_at"] = now
    write_atomically(root / "state.json", json.dumps(state, indent=1), mode=0o600)
    _escalate(root, record, now)
    _prune_logs(root / "logs", now)
    return record


def last_success_at(project: Path) -> float | None:
    """When the job last ended without a failure (None: never)."""
    value = _read_json(maintain_dir(project) / "state.json", {}).get("last_success_at")
    return float(value) if isinstance(value, int | float) else None


def cron_health(project: Path, *, limit: int = 20) -> CronHealthResult:
    """The job's health, in the shape of the seed's `cron_health` (see docs/maintenance.md)."""
    root = maintain_dir(project)
    log_path = root / "runs.jsonl"
    if root.exists() and not root.is_dir():
        return CronHealthResult(
            ok=False,
            healthy=False,
            summary=f"cannot assess: state dir {root} is not a present directory",
            stateDir=str(root),
            logPath=str(log_path),
            lastAttempt=None,
            lastSuccessAt=None,
            lastFailureAt=None,
            recent=[],
            escalations=[],
            openEscalations=0,
        )
    index = _read_json(root / "escalations.json", {})
    escalations = list(index.get("escalations") or [])
    open_ = [e for e in escalations if e.get("status") == "open"]
    runs = _read_runs(log_path)
    successes = [r["finished_at"] for r in runs if r.get("ok")]
    failures = [r["finished_at"] for r in runs if not r.get("ok")]
    healthy, summary = _verdict(open_, runs)
    return CronHealthResult(
        ok=True,
        healthy=healthy,
        summary=summary,
        stateDir=str(root),
        logPath=str(log_path),
        lastAttempt=runs[-1] if runs else None,
        lastSuccessAt=_iso(successes[-1]) if successes else None,
        lastFailureAt=_iso(failures[-1]) if failures else None,
        recent=runs[-limit:],
        escalations=escalations,
        openEscalations=len(open_),
    )


def _verdict(open_: list[dict[str, Any]], runs: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether the job is healthy, and the summary that says why."""
    if open_:
        newest = max(open_, key=lambda e: e["opened_at"])
        return False, f"UNRESOLVED: {len(open_)} open escalation(s); newest report {newest['report']}"
    if not runs:
        return True, "no maintenance runs logged yet"
    last = runs[-1]
    if not last.get("ok"):
        return False, f"UNRESOLVED FAILURE at {_iso(last['finished_at'])}: {last.get('error')}"
    return True, f"healthy: last run succeeded at {_iso(last['finished_at'])}"
