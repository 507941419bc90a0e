"""Run one of memctl's playbooks with `ansible-playbook`, following its events as they happen.

The playbook's own output goes to a log file; its events (JSON lines from the
`memctl.stack.events` callback, on a pipe) drive a progress line and the summary.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from memory_bridge import ConfigError, open_beneath, private_dir, private_file, write_atomically

from .._errors import PlaybookFailed
from ._ansible_data import as_data, dump
from ._content import content_root

__all__ = ["PlaybookRun", "projects_file", "run_playbook", "state_dir"]

Event = dict[str, Any]

_EXPANDED_GROUPS = ("memctl_projects", "memctl_stack_projects", "memctl_stack_machines")
"""The groups expand.yml puts the limited machines' projects (and stack machines) in."""


@dataclass
class PlaybookRun:
    """What a playbook run did: the recap per host and every task result, in order."""

    playbook: str
    log: Path
    returncode: int = 0
    recap: dict[str, dict[str, int]] = field(default_factory=dict)
    results: list[Event] = field(default_factory=list)

    @property
    def failures(self) -> list[Event]:
        return [r for r in self.results if r["status"] in ("failed", "unreachable")]


def state_dir() -> Path:
    """Where memctl keeps run logs: $MEMCTL_STATE_DIR, else $XDG_STATE_HOME/memctl."""
    if explicit := os.environ.get("MEMCTL_STATE_DIR"):
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "memctl"


def projects_file(log: Path) -> Path:
    """Where a run log's list of project workspaces is kept."""
    return log.with_suffix(".projects.json")


def _ansible_playbook() -> str:
    beside = Path(sys.executable).with_name("ansible-playbook")
    found = str(beside) if beside.exists() else shutil.which("ansible-playbook")
    if not found:
        raise ConfigError("ansible-playbook is not installed; install memctl with its dependencies")
    return found


def _environment(root: Path, events_fd: int, *, limited: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=str(root / "ansible.cfg"),
        ANSIBLE_ROLES_PATH=str(root / "roles"),
        ANSIBLE_COLLECTIONS_PATH=str(root / "collections"),
        ANSIBLE_CALLBACKS_ENABLED="memctl.stack.events",
        ANSIBLE_RETRY_FILES_ENABLED="false",
        ANSIBLE_GATHERING="explicit",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_FAILED="true",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_PIPELINING="true",
        MEMCTL_EVENTS_FD=str(events_fd),
    )
    env.setdefault("ANSIBLE_FORKS", "10")
    if limited:  # memctl checked the machine names; the expanded groups are empty at first
        env["ANSIBLE_HOST_PATTERN_MISMATCH"] = "ignore"
    return env


def run_playbook(
    name: str,
    inventory: Path,
    *,
    check: bool = False,
    diff: bool = False,
    extra_vars: dict[str, Any] | None = None,
    on_event: Callable[[Event], None] | None = None,
    workspaces: Sequence[str] = (),
    limit: Sequence[str] = (),
) -> PlaybookRun:
    """Run `playbooks/<name>.yml` against the inventory; raises `PlaybookFailed` if a task failed.

    The run's log goes to the state directory's `runs/`, beside a `.projects.json` naming
    the `workspaces` it is about (so `memctl logs` finds a project's runs by its directory,
    not by a name another project may share). `limit` keeps the run to those machines of the
    inventory (and the project hosts their projects become)."""
    root = content_root()
    logs = state_dir() / "runs"
    private_dir(logs)
    run = PlaybookRun(name, logs / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{name}.log")
    write_atomically(projects_file(run.log), json.dumps({"workspaces": list(workspaces)}) + "\n", mode=0o600)
    command = [_ansible_playbook(), "-i", str(inventory), str(root / "playbooks" / f"{name}.yml")]
    if check:
        command.append("--check")
    if diff:
        command.append("--diff")
    if extra_vars:
        # a file of `!unsafe` values: Ansible renders text given on its command line
        extra = run.log.with_suffix(".vars.yml")
        write_atomically(extra, dump(as_data(extra_vars)), mode=0o600)
        command += ["--extra-vars", f"@{extra}"]
    if limit:
        # The groups the expand play fills do not exist yet when Ansible reads the limit.
        command += ["--limit", ",".join([*limit, *_EXPANDED_GROUPS])]
    read_end, write_end = os.pipe()
    log_fd = open_beneath(run.log.parent, PurePath(private_file(run.log).name), os.O_WRONLY | os.O_TRUNC)
    with open(log_fd, "w", encoding="utf-8") as log:
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_environment(root, write_end, limited=bool(limit)),
                pass_fds=(write_end,),
            )
        finally:
            os.close(write_end)
        _handle(run, {"event": "started", "pid": process.pid}, on_event)
        with os.fdopen(read_end, encoding="utf-8") as events:
            for line in events:
                _handle(run, json.loads(line), on_event)
        run.returncode = process.wait()
    if run.returncode != 0 or run.failures:
        raise PlaybookFailed(_failure_message(run), run)
    return run


def _handle(run: PlaybookRun, event: Event, on_event: Callable[[Event], None] | None) -> None:
    if event["event"] == "result":
        run.results.append(event)
    elif event["event"] == "stats":
        run.recap = event["hosts"]
    if on_event is not None:
        on_event(event)


def _failure_message(run: PlaybookRun) -> str:
    if not run.failures:
        tail = run.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-6:]
        return f"ansible-playbook {run.playbook} exited with {run.returncode}: " + " / ".join(tail)
    first = run.failures[0]
    detail = first.get("msg") or first.get("stderr") or "failed"
    more = f" (and {len(run.failures) - 1} more)" if len(run.failures) > 1 else ""
    return f"{first['host']}: {first['task']}: {detail}{more}; full log: {run.log}"
