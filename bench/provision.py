"""Benchmark: wall time of `memctl up` — a cold run for one embedded project, a re-run, and a
re-run over ten projects — beside the floor of the same machine in the same run: an empty
`ansible-playbook` play (what any Ansible-driven run pays before it does anything).

Each figure is the median of --repeat runs, with the CPU time memctl and its children used
(user + system), so a busy machine shows up as wall time well above CPU time / cores.

    uv run python bench/provision.py [--repeat 3] [--out bench/results/provision.json]

Targets (issue #6): re-run of one project <= 10 s with changed=0; re-run over ten <= 30 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _env import git_commit
from memctl.provision._inventory import write_local_inventory

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds and stdout of one command."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    run = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{run.stdout}\n{run.stderr}")
    return wall, _children_cpu() - cpu_before, run.stdout


def inventory(path: Path, workspaces: list[Path]) -> Path:
    projects = [{"slug": w.name, "workspace": str(w), "clients": ["claude", "cursor"]} for w in workspaces]
    return write_local_inventory(path, projects)


def summary(samples: list[tuple[float, float]], changed: list[int]) -> dict[str, Any]:
    return {
        "wall_s": round(statistics.median(w for w, _ in samples), 2),
        "cpu_s": round(statistics.median(c for _, c in samples), 2),
        "runs": len(samples),
        "changed": changed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "provision.json")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")}
    memctl = [sys.executable, "-m", "memctl"]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="memctl-bench-") as scratch:
        root = Path(scratch)
        env["MEMCTL_STATE_DIR"] = str(root / "state")
        empty_play = root / "empty.yml"
        empty_play.write_text("- name: Nothing\n  hosts: localhost\n  gather_facts: false\n  tasks: []\n")
        one = root / "one"
        one.mkdir()
        baseline_inventory = inventory(root / "baseline.yml", [one])
        floor = [str(BIN / "ansible-playbook"), "-i", str(baseline_inventory), str(empty_play)]
        results["baseline: empty ansible-playbook play"] = summary(
            [timed(floor, env)[:2] for _ in range(args.repeat)], []
        )
        cold: list[tuple[float, float]] = []
        cold_changed: list[int] = []
        for attempt in range(args.repeat):
            fresh = root / f"cold-{attempt}"
            fresh.mkdir()
            wall, cpu, out = timed([*memctl, "up", "--project", str(fresh), "--json"], env)
            cold.append((wall, cpu))
            cold_changed.append(json.loads(out)["changed"])
        results["cold up, one embedded project"] = summary(cold, cold_changed)
        rerun: list[tuple[float, float]] = []
        rerun_changed: list[int] = []
        for _ in range(args.repeat):
            wall, cpu, out = timed([*memctl, "up", "--project", str(root / "cold-0"), "--json"], env)
            rerun.append((wall, cpu))
            rerun_changed.append(json.loads(out)["changed"])
        results["re-run, one project"] = summary(rerun, rerun_changed)
        ten = []
        for index in range(10):
            workspace = root / f"project-{index:02d}"
            workspace.mkdir()
            ten.append(workspace)
        many = inventory(root / "ten.yml", ten)
        timed([*memctl, "up", "--inventory", str(many), "--json"], env)
        ten_runs: list[tuple[float, float]] = []
        ten_changed: list[int] = []
        for _ in range(args.repeat):
            wall, cpu, out = timed([*memctl, "up", "--inventory", str(many), "--json"], env)
            ten_runs.append((wall, cpu))
            ten_changed.append(json.loads(out)["changed"])
        results["re-run, ten projects"] = summary(ten_runs, ten_changed)
    report = {
        "commit": git_commit(REPO),
        "cores": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "results": results,
        "targets": {
            "re-run, one project": {"wall_s": 10, "changed": 0},
            "re-run, ten projects": {"wall_s": 30, "changed": 0},
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"commit {report['commit']}, {report['cores']} cores, load at end {report['load_average_at_end']}")
    print(f"{'run':42} {'wall s':>8} {'cpu s':>8}  changed  target")
    for name, figures in results.items():
        target = report["targets"].get(name)
        verdict = ""
        if target:
            passed = figures["wall_s"] <= target["wall_s"] and set(figures["changed"]) == {0}
            verdict = f"<= {target['wall_s']} s, changed=0: {'PASS' if passed else 'FAIL'}"
        changed = ",".join(map(str, figures["changed"])) or "-"
        print(f"{name:42} {figures['wall_s']:>8} {figures['cpu_s']:>8}  {changed:7}  {verdict}")


if __name__ == "__main__":
    main()
