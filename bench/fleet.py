"""Benchmark: `memctl up --inventory` over two machines reached over SSH, five embedded projects
each — the first run (memctl installs itself on both, then provisions) and the second
(changed=0) — beside the same inventory run on this machine (two machines with
`ansible_connection: local`) in the same benchmark run.

The SSH machines are containers of tests/fleet/ssh-target (Debian bookworm from the
debootstrap base, sshd and python3), published on loopback ports; the first remote run pays
for pip installing memctl's dependencies from the package index on each. Needs root, Docker
and an ssh client.

    nice -n 10 uv run python bench/fleet.py [--projects 5] [--out bench/results/fleet.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from _env import git_commit

REPO = Path(__file__).resolve().parents[1]
SSH_IMAGE = "memctl-test-ssh:bookworm"
SSH_OPTIONS = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
MACHINES = ("bench-a", "bench-b")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _check(*command: str) -> str:
    run = subprocess.run(command, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{run.stdout}\n{run.stderr}")
    return run.stdout


def ssh_image(scratch: Path) -> None:
    """The tests' SSH machine image, built on the debootstrap base (both cached by Docker)."""
    _check("bash", str(REPO / "scripts" / "build-base-image.sh"))
    context = scratch / "ssh-target"
    context.mkdir()
    shutil.copy(REPO / "tests" / "fleet" / "ssh-target" / "Dockerfile", context)
    ca = Path("/etc/ssl/certs/ca-certificates.crt")
    (context / "index-ca.pem").write_bytes(ca.read_bytes() if ca.is_file() else b"")
    _check("docker", "build", "--quiet", "--network", "host", "-t", SSH_IMAGE, str(context))


def start_machines(scratch: Path, projects: int) -> tuple[dict[str, int], Path, list[str]]:
    """The SSH machines, each with its project workspaces: ports, key, container names."""
    key = scratch / "id_ed25519"
    _check("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
    ports, containers = {}, []
    for name in MACHINES:
        ports[name] = _free_port()
        container = f"memctl-bench-fleet-{os.getpid()}-{name}"
        containers.append(container)
        _check(
            "docker", "run", "--detach", "--name", container, "--publish", f"127.0.0.1:{ports[name]}:22",
            "--volume", f"{key}.pub:/root/.ssh/authorized_keys:ro", SSH_IMAGE,
        )  # fmt: skip
        workspaces = [f"/srv/src/p{index}" for index in range(projects)]
        _check("docker", "exec", container, "mkdir", "-p", *workspaces)
    for name, port in ports.items():
        deadline = time.monotonic() + 30
        probe = ["ssh", *SSH_OPTIONS.split(), "-o", "BatchMode=yes", "-i", str(key), "-p", str(port)]
        while subprocess.run([*probe, "root@127.0.0.1", "true"], capture_output=True).returncode != 0:
            if time.monotonic() > deadline:
                raise SystemExit(f"sshd of {name} did not answer")
            time.sleep(0.5)
    return ports, key, containers


def inventory(path: Path, machines: dict[str, dict[str, Any]], workspace: Any, projects: int) -> Path:
    hosts = {
        name: {
            **connection,
            "memctl_projects": [
                {"slug": f"{name}-p{i}", "workspace": workspace(name, i), "clients": ["claude"]}
                for i in range(projects)
            ],
        }
        for name, connection in machines.items()
    }
    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 1)  # as Ansible reads it
    yaml.default_flow_style = False
    yaml.dump({"all": {"hosts": hosts}}, path)
    return path


def timed_up(inventory_path: Path, env: dict[str, str]) -> dict[str, Any]:
    started = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "memctl", "up", "--inventory", str(inventory_path), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if run.returncode != 0:
        raise SystemExit(f"memctl up --inventory {inventory_path} failed:\n{run.stdout}\n{run.stderr}")
    return {"wall_s": round(wall, 1), "changed": json.loads(run.stdout)["changed"]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--projects", type=int, default=5, help="projects per machine")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "fleet.json")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="memctl-bench-fleet-") as scratch_dir:
        scratch = Path(scratch_dir)
        env["MEMCTL_STATE_DIR"] = str(scratch / "state")
        ssh_image(scratch)
        local = {
            name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
            for name in MACHINES
        }

        def local_workspace(name: str, index: int) -> str:
            directory = scratch / "local" / name / f"p{index}"
            directory.mkdir(parents=True, exist_ok=True)
            return str(directory)

        local_inventory = inventory(scratch / "local.yml", local, local_workspace, args.projects)
        results["local: first up"] = timed_up(local_inventory, env)
        results["local: second up"] = timed_up(local_inventory, env)
        ports, key, containers = start_machines(scratch, args.projects)
        try:
            remote = {
                name: {
                    "ansible_host": "127.0.0.1",
                    "ansible_port": port,
                    "ansible_user": "root",
                    "ansible_ssh_private_key_file": str(key),
                    "ansible_ssh_common_args": SSH_OPTIONS,
                }
                for name, port in ports.items()
            }
            remote_inventory = inventory(
                scratch / "remote.yml", remote, lambda _, index: f"/srv/src/p{index}", args.projects
            )
            results["ssh: first up (installs memctl)"] = timed_up(remote_inventory, env)
            results["ssh: second up"] = timed_up(remote_inventory, env)
        finally:
            for container in containers:
                subprocess.run(["docker", "rm", "--force", container], capture_output=True, check=False)
    report = {
        "commit": git_commit(REPO),
        "cores": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "machines": len(MACHINES),
        "projects_per_machine": args.projects,
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"commit {report['commit']}, {report['cores']} cores, load at end {report['load_average_at_end']}")
    print(f"{len(MACHINES)} machines x {args.projects} embedded projects")
    print(f"{'run':36} {'wall s':>8}  changed")
    for name, figures in results.items():
        print(f"{name:36} {figures['wall_s']:>8}  {figures['changed']}")


if __name__ == "__main__":
    main()
