"""Running `memctl up` as a user does: the installed command, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters

from memctl.provision._inventory import write_local_inventory

from ..bridges import MODEL_CACHE, bridge_env

REPO = Path(__file__).resolve().parents[2]


def ansible_playbook(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `ansible-playbook ARGS` from the repository with its ansible.cfg, output as text."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), *args],
        cwd=REPO,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def memctl(
    *args: str, state: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `memctl ARGS` with run logs kept under `state` (and `env` added)."""
    return subprocess.run(
        [sys.executable, "-m", "memctl", *args],
        env=bridge_env(MEMCTL_STATE_DIR=str(state), **(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def up_json(*args: str, state: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`memctl up ARGS --json`, asserting it succeeded; its report."""
    run = memctl("up", *args, "--json", state=state, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def write_inventory(path: Path, projects: list[dict[str, Any]]) -> Path:
    """An inventory of this machine holding `projects`."""
    return write_local_inventory(path, projects)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes (to prove a run changed nothing)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


PLAIN_PATH = "/usr/local/bin:/usr/bin:/bin"
"""A login shell's PATH: no virtual environment, no `uv run`."""


def rendered_server(workspace: Path, file: str = ".mcp.json") -> StdioServerParameters:
    """memctl's server as a client starts it from `file`: its command and args with the
    client's own variables expanded, a plain PATH and this HOME, in the project."""
    document = json.loads((workspace / file).read_text())
    entry = document["servers" if file == ".vscode/mcp.json" else "mcpServers"]["memory"]
    home = str(Path.home())
    values = {"${HOME}": home, "${userHome}": home, "${workspaceFolder}": str(workspace)}

    def expand(text: str) -> str:
        for variable, value in values.items():
            text = text.replace(variable, value)
        return text

    env = {"PATH": PLAIN_PATH, "HOME": home, "MEMCTL_MODEL_CACHE_DIR": str(MODEL_CACHE)}
    return StdioServerParameters(
        command=expand(entry["command"]),
        args=[expand(a) for a in entry["args"]],
        env=env,
        cwd=str(workspace),
    )
