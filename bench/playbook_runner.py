"""What ansible-runner costs beside ansible-playbook run directly (as memctl's `_playbook` does).

Runs one trivial local playbook (three tasks on localhost, no facts) N times each way,
interleaved, in one process, and prints the wall time of each way side by side, then what
ansible-runner leaves in its private_data_dir (files, modes, event count).

ansible-runner is not a memctl dependency: run this with a Python that has ansible-core and
ansible-runner installed, for example a scratch virtual environment:

    uv venv /tmp/arvenv && VIRTUAL_ENV=/tmp/arvenv uv pip install ansible-core ansible-runner
    /tmp/arvenv/bin/python bench/playbook_runner.py --runs 10
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

PLAYBOOK = """\
- name: Trivial
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: One
      ansible.builtin.debug:
        msg: one
    - name: Two
      ansible.builtin.set_fact:
        two: 2
    - name: Three
      ansible.builtin.command: "true"
      changed_when: false
"""

ENV = {
    "ANSIBLE_NOCOLOR": "1",
    "ANSIBLE_RETRY_FILES_ENABLED": "false",
    "ANSIBLE_LOCALHOST_WARNING": "false",
    "ANSIBLE_PIPELINING": "true",
}


def _direct(work: Path) -> float:
    """ansible-playbook as a subprocess, output to a log file (memctl's way)."""
    playbook = Path(sys.executable).with_name("ansible-playbook")
    start = time.perf_counter()
    with (work / "direct.log").open("w") as log:
        done = subprocess.run(
            [str(playbook), "-i", str(work / "hosts"), str(work / "project" / "site.yml")],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **ENV},
            check=False,
        )
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, (work / "direct.log").read_text()
    return elapsed


def _runner(work: Path, index: int) -> tuple[float, Path, int]:
    """ansible_runner.run with a private_data_dir (the interface AWX uses)."""
    import ansible_runner

    data = work / f"runner-{index}"
    (data / "project").mkdir(parents=True)
    (data / "project" / "site.yml").write_text(PLAYBOOK)
    events = 0

    def count(_event: dict[str, object]) -> bool:
        nonlocal events
        events += 1
        return True

    start = time.perf_counter()
    result = ansible_runner.run(
        private_data_dir=str(data),
        playbook="site.yml",
        inventory=str(work / "hosts"),
        envvars=ENV,
        quiet=True,
        event_handler=count,
    )
    elapsed = time.perf_counter() - start
    assert result.rc == 0, result.stdout.read()
    return elapsed, data, events


def _summary(name: str, times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    return (
        f"{name:<34} median {statistics.median(ms):7.0f} ms   min {ms[0]:7.0f}   max {ms[-1]:7.0f}"
        f"   mean {statistics.fmean(ms):7.0f}"
    )


def _files(data: Path) -> list[str]:
    found = []
    for path in sorted(data.rglob("*")):
        kind = "d" if path.is_dir() else "f"
        found.append(f"  {kind} {path.stat().st_mode & 0o777:04o} {path.relative_to(data)}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each way (default 10)")
    args = parser.parse_args()
    import ansible_runner  # noqa: F401 (fail early, before any timing)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "project").mkdir()
        (work / "project" / "site.yml").write_text(PLAYBOOK)
        host = f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n"
        (work / "hosts").write_text(host)
        _direct(work)  # warm the page cache for both ways
        _runner(work, -1)
        direct, runner = [], []
        for index in range(args.runs):
            direct.append(_direct(work))
            elapsed, data, events = _runner(work, index)
            runner.append(elapsed)
        versions = f"ansible-runner {version('ansible-runner')}, ansible-core {version('ansible-core')}"
        print(f"python {sys.version.split()[0]}, {versions}, {args.runs} runs each")
        print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.2f} at the end")
        print(_summary("ansible-playbook (memctl's way)", direct))
        print(_summary("ansible_runner.run", runner))
        mask = os.umask(0)
        os.umask(mask)
        print(f"ansible-runner: {events} events for a 3-task play; umask {mask:04o}")
        print("what ansible-runner left in its private_data_dir (mode, path):")
        print("\n".join(_files(data)))


if __name__ == "__main__":
    main()
