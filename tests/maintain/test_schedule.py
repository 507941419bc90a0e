"""`memctl up --schedule`: one timer per project, idempotent, removed by `memctl down`.

A user's crontab is not kept in their home (Debian's crontab writes
/var/spool/cron/crontabs/USER), so a hermetic HOME cannot hold it. The full flow runs
against a stand-in `crontab` on PATH that keeps the table in $HOME/.crontab; the real
`crontab` of Debian's cron package is proved on the same flow as a throwaway user (root
only; CI runs as root with cron installed by scripts/test, so there it must not skip).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_bridge.maintenance import maintain_dir

from ..bridges import bridge_env
from ..provision.helpers import memctl

FAKE_CRONTAB = """#!/bin/sh
# A stand-in crontab keeping one user's table in $HOME/.crontab.
table="$HOME/.crontab"
case "$1" in
  -l) [ -f "$table" ] || { echo "no crontab for $(id -un)" >&2; exit 1; }; cat "$table" ;;
  -r) rm -f "$table" ;;
  -) cat > "$table" ;;
  *) cat "$1" > "$table" ;;
esac
"""

# The real crontab, run as `user`: the table Ansible wrote goes in on stdin (the user
# cannot read root's temporary file).
REAL_CRONTAB = """#!/bin/sh
case "$1" in
  -l|-r) exec runuser -u {user} -- {crontab} "$1" ;;
  *) exec runuser -u {user} -- {crontab} - < "$1" ;;
esac
"""

TAG = "#Ansible: memctl-maintain"


def _up(workspace: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    run = memctl(
        "up",
        "--project",
        str(workspace),
        "--client",
        "claude",
        "--json",
        *args,
        state=workspace.parent / "state",
        env=env,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def _down(workspace: Path, env: dict[str, str]) -> dict[str, Any]:
    run = memctl("down", "--project", str(workspace), "--json", state=workspace.parent / "state", env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def _env(bin_dir: Path) -> dict[str, str]:
    # no user systemd answers here, so the crontab is the timer (DBUS/XDG_RUNTIME_DIR unset)
    path = os.pathsep.join([str(bin_dir), os.environ["PATH"]])
    return {
        "PATH": path,
        "XDG_RUNTIME_DIR": "/nonexistent",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent",
    }


def _lines(table: str, workspace: Path) -> list[str]:
    """The project's tag line and the job line after it."""
    lines = table.splitlines()
    tags = [i for i, line in enumerate(lines) if line.startswith(TAG) and line.endswith(str(workspace))]
    return [line for i in tags for line in lines[i : i + 2]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    root.mkdir()
    return root


def test_schedule_daily_twice_changes_nothing_and_down_removes_it(workspace: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "crontab").write_text(FAKE_CRONTAB)
    (bin_dir / "crontab").chmod(0o755)
    env = _env(bin_dir)
    table = Path.home() / ".crontab"
    table.write_text("MAILTO=me\n# my own job\n5 4 * * * backup.sh\n")

    first = _up(workspace, env, "--schedule", "daily")
    assert first["projects"][0]["schedule"] == "changed"
    tag, job = _lines(table.read_text(), workspace)
    assert tag == f"{TAG} app {workspace}"
    minute, hour, *_ = job.split()
    assert hour == "3" and 0 <= int(minute) < 60
    assert f"maintain --project {workspace} --if-due" in job and '"$HOME"/.local/bin/memctl' in job
    assert json.loads((workspace / ".memory" / "project.json").read_text())["schedule"] == "daily"

    second = _up(workspace, env, "--schedule", "daily")
    assert second["changed"] == 0 and second["projects"][0]["schedule"] == "unchanged"
    plain = _up(workspace, env)  # without --schedule: the timer stays as it is
    assert plain["changed"] == 0 and _lines(table.read_text(), workspace) == [tag, job]

    # The line runs the job as cron would: /bin/sh, a bare PATH, this HOME.
    command = job.split(None, 5)[5]
    cron = {
        "HOME": str(Path.home()),
        "PATH": "/usr/bin:/bin",
        "MEMCTL_MODEL_CACHE_DIR": bridge_env()["MEMCTL_MODEL_CACHE_DIR"],
    }
    ran = subprocess.run(["/bin/sh", "-c", command], env=cron, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    [record] = [
        json.loads(line) for line in (maintain_dir(workspace) / "runs.jsonl").read_text().splitlines()
    ]
    assert record["trigger"] == "schedule" and record["ok"] is True

    hourly = _up(workspace, env, "--schedule", "hourly")
    assert hourly["projects"][0]["schedule"] == "changed"
    [_, job] = _lines(table.read_text(), workspace)
    assert job.split()[1] == "*"

    down = _down(workspace, env)
    assert down["projects"][0]["schedule"] == "changed"
    assert table.read_text() == "MAILTO=me\n# my own job\n5 4 * * * backup.sh\n", "the user's lines stay"
    assert _down(workspace, env)["projects"][0]["schedule"] == "unchanged"


@pytest.fixture
def throwaway_user() -> Iterator[str]:
    crontab = shutil.which("crontab")
    missing = [
        what
        for what, ok in (("root", os.geteuid() == 0), ("crontab (apt-get install cron)", crontab))
        if not ok
    ]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"the real crontab test needs {', '.join(missing)} in CI")
        pytest.skip(f"the real crontab test needs {', '.join(missing)}")
    user = f"memctl-t{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
    try:
        yield user
    finally:
        subprocess.run(["crontab", "-u", user, "-r"], capture_output=True)
        subprocess.run(["userdel", user], check=True)


def test_the_real_crontab_takes_and_gives_back_the_line(
    workspace: Path, tmp_path: Path, throwaway_user: str
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = REAL_CRONTAB.format(user=throwaway_user, crontab=shutil.which("crontab"))
    (bin_dir / "crontab").write_text(shim)
    (bin_dir / "crontab").chmod(0o755)
    env = _env(bin_dir)

    def table() -> str:
        read = subprocess.run(["crontab", "-u", throwaway_user, "-l"], capture_output=True, text=True)
        return read.stdout if read.returncode == 0 else ""

    assert _up(workspace, env, "--schedule", "daily")["projects"][0]["schedule"] == "changed"
    _, job = _lines(table(), workspace)
    assert f"maintain --project {workspace} --if-due" in job
    assert _up(workspace, env, "--schedule", "daily")["changed"] == 0
    assert _down(workspace, env)["projects"][0]["schedule"] == "changed"
    assert _lines(table(), workspace) == []


FAKE_SYSTEMCTL = """#!/bin/sh
# A stand-in `systemctl --user`: logs each call, keeps each unit's enabled and active state
# as files under $HOME/.fake-systemd.
state="$HOME/.fake-systemd"
mkdir -p "$state"
echo "$*" >> "$state/calls"
[ "$1" = "--user" ] && shift
unit="$2"
case "$1" in
  show)
    active=inactive; [ -f "$state/$unit.active" ] && active=active
    enabled=disabled; [ -f "$state/$unit.enabled" ] && enabled=enabled
    printf 'Id=%s\\nLoadState=loaded\\nActiveState=%s\\nUnitFileState=%s\\n' \\
      "$unit" "$active" "$enabled" ;;
  is-enabled) if [ -f "$state/$unit.enabled" ]; then echo enabled; else echo disabled; exit 1; fi ;;
  is-active) if [ -f "$state/$unit.active" ]; then echo active; else echo inactive; exit 3; fi ;;
  enable) touch "$state/$unit.enabled" ;;
  disable) rm -f "$state/$unit.enabled" ;;
  start) touch "$state/$unit.active" ;;
  stop) rm -f "$state/$unit.active" ;;
esac
"""


def test_where_systemd_answers_the_timer_is_a_user_unit_systemd_accepts(
    workspace: Path, tmp_path: Path
) -> None:
    """A user systemd cannot run in a test, so `systemctl` is a stand-in that keeps unit
    states; the unit files the role writes are checked by the real `systemd-analyze verify`."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        if os.environ.get("CI"):
            pytest.fail("systemd-analyze is missing in CI (scripts/test installs systemd)")
        pytest.skip("systemd-analyze is missing (apt-get install systemd)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(FAKE_SYSTEMCTL)
    (bin_dir / "systemctl").chmod(0o755)
    env = _env(bin_dir)
    units = Path.home() / ".config" / "systemd" / "user"
    fake = Path.home() / ".fake-systemd"

    assert _up(workspace, env, "--schedule", "daily")["projects"][0]["schedule"] == "changed"
    [timer] = units.glob("memctl-maintain-app-*.timer")
    service = timer.with_suffix(".service")
    assert f"--project {workspace} --if-due" in service.read_text()
    assert "OnCalendar=*-*-* 03:" in timer.read_text() and "Persistent=true" in timer.read_text()
    assert sorted(p.name for p in fake.glob("*.timer.*")) == [f"{timer.name}.active", f"{timer.name}.enabled"]
    assert not (Path.home() / ".crontab").exists()

    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    verify = subprocess.run(
        [analyze, "verify", "--user", timer.name, service.name],
        cwd=units,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
        capture_output=True,
        text=True,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr  # %h/.local/bin/memctl is the launcher

    assert _up(workspace, env, "--schedule", "daily")["changed"] == 0
    down = _down(workspace, env)
    assert down["projects"][0]["schedule"] == "changed"
    assert list(units.glob("memctl-maintain-*")) == [] and list(fake.glob("*.timer.*")) == []


def test_schedule_is_for_one_project_and_names_its_choices(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.yml"
    refused = memctl("up", "--inventory", str(inventory), "--schedule", "daily", state=tmp_path / "state")
    assert refused.returncode == 2 and "--schedule is for one project" in refused.stderr
    wrong = memctl("up", "--schedule", "weekly", state=tmp_path / "state")
    assert wrong.returncode == 2 and "'weekly' is not one of 'daily', 'hourly', 'off'" in wrong.stderr
