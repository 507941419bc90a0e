"""The detached worker a hook starts: `python -m memctl.capture._worker JOB_FILE`.

It runs one staged job (flush, plan or compile), records the outcome (or the reason
it failed) in `.memory/capture/capture.log`, and deletes the job file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from memory_bridge import MemctlError, load_settings
from memory_bridge.core import redact

from ._compile import compile_project
from ._flush import flush
from ._llm import make_provider
from ._log import log_event
from ._paths import CaptureDirs
from ._plan import capture_plan

__all__ = ["NO_PROVIDER", "main", "run_job"]

NO_PROVIDER = "no capture provider configured (set capture_provider)"


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job; the fields to log about it."""
    settings = load_settings(project=job["project"])
    kind = job["kind"]
    if kind == "plan":
        name, delivery = anyio.run(capture_plan, settings, job["plan"])
        return {
            "outcome": "captured",
            "name": name,
            "queued": delivery.pending,
            "store_error": delivery.error,
        }
    provider = make_provider(settings)
    if provider is None:
        return {"outcome": "skipped", "reason": NO_PROVIDER}
    if kind == "compile":
        report = anyio.run(lambda: compile_project(settings, provider, dry_run=False))
        return {"outcome": "compiled", **{k: v for k, v in report.to_dict().items() if k != "atoms"}}
    wait = settings.capture.timeout_seconds * (settings.capture.retries + 1) + 60
    result = anyio.run(
        lambda: flush(
            settings,
            provider,
            session_id=job["session_id"],
            transcript=Path(job["transcript"]),
            event=job["event"],
            lock_wait=wait,
        )
    )
    return result.to_dict()


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    job: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    dirs = CaptureDirs(Path(job["project"]))
    event = job.get("event") or job["kind"]
    try:
        fields = run_job(job)
    except (MemctlError, OSError) as exc:
        fields = {"outcome": "failed", "reason": redact(f"{type(exc).__name__}: {exc}")}
    finally:
        path.unlink(missing_ok=True)
    log_event(dirs.log, job["kind"], hook=event, session=job.get("session_id"), **fields)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
