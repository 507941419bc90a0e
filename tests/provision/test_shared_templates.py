"""Ansible renders memctl's shared templates (top-level `templates/`) from a role, byte for
byte as the tasks they replaced wrote and as memctl's own loader renders them, and a second
run changes nothing."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from memctl.provision._templates import render

from .. import yamlfiles
from .helpers import ansible_playbook

REPO = Path(__file__).resolve().parents[2]
ROLE = REPO / "roles" / "migrations"
PROJECT = {"slug": "app", "workspace": "/srv/app", "clients": ["claude"], "note": "é <&> 'q' \"dq\""}


def _record_task() -> dict[str, Any]:
    """The migrations role's task that writes .memory/project.json, as the role holds it."""
    tasks = yamlfiles.load((ROLE / "tasks" / "main.yml").read_text(encoding="utf-8"))
    (task,) = [t for t in tasks if t["name"].startswith("Record the project")]
    return dict(task)


def _play(tmp_path: Path, *args: str) -> int:
    """Run the role's task and the task it replaced; how many tasks changed something."""
    before = {
        "name": "What the role wrote before the template",
        "ansible.builtin.copy": {
            "dest": "{{ out }}/before.json",
            "content": "{{ migrations_project | to_nice_json(indent=2) }}\n",
            "mode": "0600",
        },
    }
    play = {"name": "Record", "hosts": "localhost", "gather_facts": False, "tasks": [_record_task(), before]}
    playbook = tmp_path / "play.yml"
    playbook.write_text(yamlfiles.dump([play]))
    extra = {
        "out": str(tmp_path),
        "role_path": str(ROLE),
        "migrations_workspace": str(tmp_path),
        "migrations_project": PROJECT,
        "ansible_python_interpreter": sys.executable,
    }
    run = ansible_playbook("-i", "localhost,", "-c", "local", "-e", json.dumps(extra), *args, str(playbook))
    assert run.returncode == 0, run.stdout + run.stderr
    recap = re.search(r"localhost\s+:.*changed=(\d+)", run.stdout)
    assert recap is not None, run.stdout
    return int(recap.group(1))


def test_project_record_renders_as_before_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / ".memory").mkdir()
    assert _play(tmp_path) == 2
    record = tmp_path / ".memory" / "project.json"
    assert record.read_bytes() == (tmp_path / "before.json").read_bytes()
    assert record.stat().st_mode & 0o777 == 0o600
    assert record.read_text(encoding="utf-8") == render("memory/project.json.j2", migrations_project=PROJECT)
    assert _play(tmp_path, "--check", "--diff") == 0
    assert _play(tmp_path) == 0
