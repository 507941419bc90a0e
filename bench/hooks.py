"""Hook front latency: `memctl hook <event>` as a client runs it, beside two baselines.

uv run --frozen python bench/hooks.py            # 30 runs of each
uv run --frozen python bench/hooks.py --runs 100 --json hooks.json

Every command runs through `bash -c`, as Claude Code runs a hook's command line:
- `python -c pass`: the interpreter's own start-up, the floor;
- `memctl --version`: the CLI's own start-up (click; each command loads when it runs);
- `memctl hook session-end # memctl-hook-v1` with a real payload and transcript: reads
  the JSON, stages a job and starts the detached worker (the run waits for that worker
  to finish before the next one, as hooks of one session are minutes apart);
- `memctl hook session-start # memctl-hook-v1`: prints the agent's context (compile
  already ran today, so nothing is started).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _env import git_commit

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "capture" / "fixtures" / "claude-session.jsonl"
BIN = Path(sys.executable).parent


def _timed(command: str, stdin: str, cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        ["bash", "-c", command], input=stdin, cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return (time.perf_counter() - start) * 1000


def _wait_idle(jobs: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while any(jobs.glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.05)


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 1),
        "max_ms": round(ordered[-1], 1),
    }


def run(runs: int) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="memctl-bench-hooks-") as tmp:
        project = Path(tmp) / "app"
        capture = project / ".memory" / "capture"
        capture.mkdir(parents=True)
        (capture / "compile-state.json").write_text(
            json.dumps({"last_attempted_date": time.strftime("%Y-%m-%d", time.gmtime())})
        )
        transcript = Path(tmp) / "session.jsonl"
        transcript.write_text(FIXTURE.read_text())
        env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8"}
        payload = json.dumps({"session_id": "bench", "transcript_path": str(transcript), "cwd": str(project)})
        cases = {
            "python -c pass (baseline)": (f"{sys.executable} -c pass", ""),
            "memctl --version (baseline)": ("memctl --version", ""),
            "memctl hook session-end": ("memctl hook session-end # memctl-hook-v1", payload),
            "memctl hook session-start": ("memctl hook session-start # memctl-hook-v1", "{}"),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for name, (command, stdin) in cases.items():
            _timed(command, stdin, project, env)  # warm the page cache
            _wait_idle(capture / "jobs")
            for _ in range(runs):
                samples[name].append(_timed(command, stdin, project, env))
                _wait_idle(capture / "jobs")
            print(f"{name}: done", file=sys.stderr)
    return {
        "runs": runs,
        "python": platform.python_version(),
        "commit": git_commit(ROOT),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "results": {name: _summary(values) for name, values in samples.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args()
    report = run(args.runs)
    print(
        f"hook front, {report['runs']} runs each (commit {report['commit']}, Python {report['python']}, "
        f"1-min load average {report['load_average'][0]} -> {report['load_average'][1]})"
    )
    print(f"{'command':<32} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, row in report["results"].items():
        print(f"{name:<32} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['max_ms']:>8}")
    p95 = report["results"]["memctl hook session-end"]["p95_ms"]
    print(f"target: hook front p95 <= 300 ms: {'met' if p95 <= 300 else 'MISSED'} ({p95} ms)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
