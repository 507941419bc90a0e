"""`memctl up --inventory` from a control node provisions projects on machines it reaches over
SSH, installing itself there first (issue 17). testinfra checks each machine over SSH."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .. import yamlfiles
from ..bridges import free_port
from .conftest import STACK_WORKSPACE, Fleet, Target

pytestmark = [pytest.mark.fleet]

Result = tuple[int, dict[str, Any], str]
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)
OLD_PYTHON = "printf '#!/bin/sh\\necho 3.9.18\\n' > /usr/local/bin/old && chmod +x /usr/local/bin/old"
LAUNCHER = "/root/.local/bin/memctl"
DEPLOY_VENV = "/opt/memctl-deploy"
BRIDGE = "memctl-bridge-fleet-a-stack"
HEALTH = "python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:3106/health').read().decode())\""
CHECK_TASK = "Check that the machine's projects are healthy before the next machine is upgraded"
# What a run leaves on a machine, outside the stores' own files (which a read may touch).
SNAPSHOT = (
    "find /srv/src/alpha /root/.local/bin /opt/memctl/memctl-installed /opt/memctl/wheels "
    "-path /srv/src/alpha/.memory/memory -prune -o -type f -print0 | sort -z | xargs -0 sha256sum"
)


@dataclass
class Runs:
    """The runs the tests share: two of `memctl up` (the second with machines and a project
    that fail), `memctl upgrade` and `memctl up --check --diff`, with what --check left."""

    first: Result
    failing: Result
    upgrade: Result
    check: Result
    before_check: dict[str, str]
    after_check: dict[str, str]


def snapshot(fleet: Fleet) -> dict[str, str]:
    return {t.name: t.host().check_output(SNAPSHOT) for t in fleet.targets}


def recap(log: str) -> dict[str, tuple[int, ...]]:
    """Per host of a run log's recap: ok, changed, unreachable, failed."""
    return {m[1]: tuple(int(n) for n in m.groups()[1:]) for m in RECAP.finditer(log)}


def log_of(message: str) -> str:
    return Path(message.rsplit("full log: ", 1)[1].strip()).read_text()


def deploy_machine(fleet: Fleet) -> dict[str, Any]:
    """fleet-deploy: fleet-a's container reached as deploy, a user who may sudo, installing
    memctl as root (memctl_install_become) into an environment of its own."""
    deploy: dict[str, Any] = {"ansible_port": fleet.targets[0].port, "ansible_user": "deploy"}
    deploy.update(memctl_install_become=True, memctl_install_dir=DEPLOY_VENV)
    deploy["memctl_projects"] = [
        {"slug": "deploy-alpha", "workspace": "/home/deploy/alpha", "clients": ["claude"]}
    ]
    return deploy


def failing_inventory(fleet: Fleet) -> Path:
    """fleet-a and fleet-b, with three things that fail: fleet-gone cannot be reached, fleet-old
    (fleet-a's container) has only Python 3.9, and fleet-b's second project's workspace does not
    exist there; and fleet-deploy, provisioned for the first time."""
    a, b = fleet.targets
    a.host().check_output(OLD_PYTHON)
    gone = {"ansible_port": free_port(), "memctl_projects": [{"slug": "gone-alpha", "workspace": "/srv/a"}]}
    old = {"ansible_port": a.port, "memctl_install_python": "/usr/local/bin/old"}
    old["memctl_projects"] = [{"slug": "old-alpha", "workspace": "/srv/src/beta"}]
    projects = [
        {"slug": "fleet-b-alpha", "workspace": "/srv/src/alpha", "clients": ["claude"]},
        {"slug": "fleet-b-missing", "workspace": "/srv/src/missing"},
    ]
    extra = {
        "fleet-gone": gone,
        "fleet-old": old,
        b.name: {"ansible_port": b.port, "memctl_projects": projects},
        "fleet-deploy": deploy_machine(fleet),
    }
    return fleet.write_inventory(fleet.root / "failing.yml", extra)


@pytest.fixture(scope="module")
def runs(fleet: Fleet) -> Runs:
    first = fleet.up()
    assert first[0] == 0, first[2]
    failing = fleet.up(inventory=failing_inventory(fleet))
    upgrade = fleet.memctl("upgrade", "--inventory", str(fleet.inventory))
    before = snapshot(fleet)
    check = fleet.up("--check", "--diff")
    return Runs(first, failing, upgrade, check, before, snapshot(fleet))


def test_the_first_run_installs_memctl_and_provisions_each_machine(fleet: Fleet, runs: Runs) -> None:
    code, report, output = runs.first
    assert code == 0, output
    assert {p["slug"]: p["machine"] for p in report["projects"]} == {
        "fleet-a-alpha": "fleet-a",
        "fleet-a-stack": "fleet-a",
        "fleet-b-alpha": "fleet-b",
    }
    assert all(p["smoke"]["tools"] > 0 for p in report["projects"])  # an MCP round trip there
    for target in fleet.targets:
        host = target.host()
        assert host.run("/opt/memctl/bin/memctl --version").stdout.strip().endswith("0.1.0")
        memory = host.file("/srv/src/alpha/.memory")
        assert memory.is_directory and memory.mode == 0o700
        assert host.file("/srv/src/alpha/.memory/bridge.token").mode == 0o600
        assert host.file("/srv/src/alpha/.mcp.json").contains("memctl")
        assert host.file("/root/.local/bin/memctl").contains("/opt/memctl/bin/memctl")
        project = host.file("/srv/src/alpha/.memory/project.json").content_string
        assert f'"{target.name}-alpha"' in project  # each machine holds its own project only


def test_a_second_run_changes_nothing(runs: Runs) -> None:
    """The failing run is the second over fleet-a and fleet-b: their projects change nothing."""
    hosts = recap(log_of(runs.failing[1]["message"]))
    for name in ("fleet-a", "fleet-a-alpha", "fleet-a-stack", "fleet-b", "fleet-b-alpha"):
        assert hosts[name][1:] == (0, 0, 0), f"{name} changed or failed: {hosts[name]}"


def test_check_diff_changes_nothing(runs: Runs) -> None:
    code, report, output = runs.check
    assert code == 0, output
    assert report["check"] is True and report["changed"] == 0
    assert runs.after_check == runs.before_check


def test_limit_touches_only_that_machine(fleet: Fleet, runs: Runs) -> None:
    """fleet-b: the machine without a stack, so the run stays short."""
    a, b = (t.host() for t in fleet.targets)
    b.check_output("rm /srv/src/alpha/.mcp.json")
    a.check_output("mv /srv/src/alpha/.mcp.json /srv/src/alpha/.mcp.json.aside")
    code, report, output = fleet.up("--limit", "fleet-b")
    assert code == 0, output
    assert [p["slug"] for p in report["projects"]] == ["fleet-b-alpha"]
    assert set(recap(Path(report["log"]).read_text())) == {"fleet-b", "fleet-b-alpha"}
    assert b.file("/srv/src/alpha/.mcp.json").exists
    assert not a.file("/srv/src/alpha/.mcp.json").exists
    a.check_output("mv /srv/src/alpha/.mcp.json.aside /srv/src/alpha/.mcp.json")


def test_limit_names_an_unknown_machine(fleet: Fleet) -> None:
    code, report, _ = fleet.up("--limit", "fleet-z")
    assert code == 2 and "--limit: fleet-z is not a machine of" in report["message"]


def test_a_machine_or_project_that_fails_fails_only_its_own_projects(fleet: Fleet, runs: Runs) -> None:
    """fleet-gone cannot be reached, fleet-old's Python is too old, and on fleet-b a second
    project's workspace does not exist (checked there): each fails saying why, and the other
    projects finish."""
    code, report, output = runs.failing
    assert code == 6, output
    message = report["message"]
    assert message.startswith("3 of 7 projects failed:\n"), message
    assert "\n  gone-alpha: fleet-gone unreachable at memctl_install : Find the machine's Python" in message
    assert (
        "\n  old-alpha: fleet-old failed at memctl_install : Refuse a machine without Python 3.11" in message
    )
    assert "memctl needs Python 3.11 or later on fleet-old, and /usr/local/bin/old is 3.9.18" in message
    assert (
        "\n  fleet-b-missing: failed at bridge : Refuse a workspace that is not an existing directory: "
        in message
    )
    assert "workspace /srv/src/missing is not an existing directory on its machine" in message
    assert "\nfinished: fleet-a-alpha, fleet-a-stack, fleet-b-alpha, deploy-alpha\nfull log: " in message
    a, b = (t.host() for t in fleet.targets)
    assert not b.file("/srv/src/missing").exists
    assert not a.file("/srv/src/beta/.memory").exists


def test_status_probes_each_project_on_its_machine(fleet: Fleet, runs: Runs) -> None:
    """One machine cannot be reached: its project is reported failing, saying why; the others
    are probed on their machines by the memctl installed there."""
    gone = {"ansible_port": free_port(), "memctl_projects": [{"slug": "gone-alpha", "workspace": "/srv/a"}]}
    machines = {"fleet-gone": gone, "fleet-deploy": deploy_machine(fleet)}
    inventory = fleet.write_inventory(fleet.root / "status-gone.yml", machines)
    code, report, output = fleet.memctl("status", "--inventory", str(inventory))
    assert code == 5 and report["ok"] is False, output
    projects = {p["slug"]: p for p in report["projects"]}
    assert set(projects) == {"fleet-a-alpha", "fleet-a-stack", "fleet-b-alpha", "gone-alpha", "deploy-alpha"}
    assert projects["gone-alpha"]["ok"] is False and projects["gone-alpha"]["machine"] == "fleet-gone"
    assert projects["gone-alpha"]["error"].startswith("unreachable at "), projects["gone-alpha"]
    where = {"fleet-a-alpha": "fleet-a", "fleet-b-alpha": "fleet-b", "deploy-alpha": "fleet-deploy"}
    where["fleet-a-stack"] = "fleet-a"
    workspaces = {"deploy-alpha": "/home/deploy/alpha", "fleet-a-stack": STACK_WORKSPACE}
    for slug, machine in where.items():
        project = projects[slug]
        assert project["ok"] is True and project["machine"] == machine, project
        assert project["project"] == workspaces.get(slug, "/srv/src/alpha")
        assert all(store["healthy"] for store in project["stores"])
        assert all(client["ok"] for client in project["clients"])


def test_upgrade_goes_one_machine_at_a_time_checking_each(runs: Runs) -> None:
    code, report, output = runs.upgrade
    assert code == 0, output
    assert report["changed"] == 0
    log = Path(report["log"]).read_text()
    install = log.split("PLAY [Upgrade memctl on the machines", 1)[1].split("PLAY [Expand", 1)[0]
    tasks = re.findall(r"^TASK \[(.+?)\]", install, re.MULTILINE)
    one = ["memctl_install : Find the machine's Python and its version", CHECK_TASK]
    assert [t for t in tasks if t in one] == one + one  # fleet-a installed and checked, then fleet-b
    assert re.search(rf"TASK \[{re.escape(CHECK_TASK)}\].*\nok: \[fleet-a\] => \(item=fleet-a-alpha\)", log)


def test_upgrade_stops_at_the_first_unhealthy_machine(fleet: Fleet, runs: Runs, tmp_path: Path) -> None:
    """fleet-b's client config cannot start memctl's server: fleet-a gets memctl and is checked
    healthy, fleet-b fails its check, so no service or setting moves anywhere, and
    fleet-later (after it) is never touched."""
    b = fleet.targets[1].host()
    b.check_output(f"mv {LAUNCHER} {LAUNCHER}.aside && printf '#!/bin/sh\\nexit 3\\n' > {LAUNCHER}")
    b.check_output(f"chmod +x {LAUNCHER}")
    later = {"ansible_port": fleet.targets[0].port}
    later["memctl_projects"] = [{"slug": "later-beta", "workspace": "/srv/src/beta"}]
    try:
        inventory = fleet.write_inventory(tmp_path / "unhealthy.yml", {"fleet-later": later})
        code, report, output = fleet.memctl("upgrade", "--inventory", str(inventory))
    finally:
        b.check_output(f"mv {LAUNCHER}.aside {LAUNCHER}")
    assert code == 6, output
    message = report["message"]
    reason = f"fleet-b failed at {CHECK_TASK}: fleet-b-alpha is not healthy: "
    assert message.startswith(f"1 of 4 projects failed:\n  fleet-b-alpha: {reason}"), message
    assert ".mcp.json" in message.split(reason, 1)[1].split("\n", 1)[0]
    roll = (
        "\nupgraded: none"  # the roll stopped before any service or setting moved
        "\nmemctl installed and checked, services and settings not moved yet:"
        " fleet-a (fleet-a-alpha, fleet-a-stack)"
        "\nnot touched: fleet-later (later-beta)\n"
    )
    assert roll + "full log: " in message
    hosts = recap(log_of(message))
    assert hosts["fleet-b"][3] == 1 and "fleet-later" not in hosts


def test_a_user_who_may_sudo_installs_memctl_as_root(fleet: Fleet, runs: Runs) -> None:
    """fleet-deploy (in the failing run) logs in as deploy and installs memctl with sudo into
    a root-owned environment; the project's files are deploy's (its status is checked with
    the others')."""
    log = log_of(runs.failing[1]["message"])
    install = log.split("TASK [memctl_install : Install memctl and its dependencies]", 1)[1].split("TASK", 1)[
        0
    ]
    assert "changed: [fleet-deploy]" in install
    host = fleet.targets[0].host()
    installed = host.file(f"{DEPLOY_VENV}/memctl-installed")
    assert installed.user == "root" and installed.content_string.startswith(f"{DEPLOY_VENV}/wheels/memctl-")
    assert host.file(f"{DEPLOY_VENV}/bin/python").user == "root"
    memory = host.file("/home/deploy/alpha/.memory")
    assert memory.user == "deploy" and memory.mode == 0o700
    assert host.file("/home/deploy/alpha/.memory/bridge.token").user == "deploy"
    assert host.file("/home/deploy/alpha/.mcp.json").user == "deploy"
    assert host.file("/home/deploy/.local/bin/memctl").contains(f"{DEPLOY_VENV}/bin/memctl")


def test_check_on_a_machine_without_memctl_says_what_it_would_do(fleet: Fleet, new_machine: Target) -> None:
    """memctl is not installed on fleet-c yet: --check predicts the install, leaves the project
    out saying why, and fails nothing."""
    project = {"slug": "fleet-c-alpha", "workspace": "/srv/src/alpha", "clients": ["claude"]}
    machine = {"ansible_port": new_machine.port, "memctl_projects": [project]}
    inventory = fleet.write_inventory(fleet.root / "new.yml", {new_machine.name: machine})
    code, report, output = fleet.up("--check", "--diff", "--limit", "fleet-c", inventory=inventory)
    assert code == 0, output
    assert report["check"] is True and report["changed"] > 0
    [record] = report["projects"]
    assert record["slug"] == "fleet-c-alpha" and record["failed"] == 0
    assert record["warnings"] == [
        "memctl is not installed on fleet-c yet: a run without --check installs it, then provisions "
        "this project (what that changes cannot be predicted before)"
    ]
    log = Path(report["log"]).read_text()
    assert "changed: [fleet-c]" in log.split("TASK [memctl_install : Create memctl's virtual environment]")[1]
    host = new_machine.host()
    assert not host.file("/opt/memctl").exists and not host.file("/srv/src/alpha/.memory").exists


def test_a_stack_project_runs_in_its_machines_own_docker_engine(fleet: Fleet, runs: Runs) -> None:
    """fleet-a's stack project: memctl's docker role installed and started the machine's engine,
    loaded the images the control node shipped, and built the bridge image there from the
    installed wheel's sources; the bridge answers on the machine's own loopback."""
    host = fleet.targets[0].host()
    assert host.package("docker.io").is_installed
    for name in ("memctl-valkey", BRIDGE):
        assert host.docker(name).is_running
    assert host.check_output(f"docker inspect --format '{{{{.State.Health.Status}}}}' {BRIDGE}") == "healthy"
    assert host.check_output("docker port %s", BRIDGE).split() == ["3106/tcp", "->", "127.0.0.1:3106"]
    assert json.loads(host.check_output(HEALTH)) == {"ok": True}
    assert host.file(f"{STACK_WORKSPACE}/.memory/bridge.token").mode == 0o600
    settings = tomllib.loads(host.file(f"{STACK_WORKSPACE}/.memory/config.toml").content_string)
    assert settings["entry_store"] == "valkey://127.0.0.1:6379/0?prefix=fleet-a-stack:"
    assert "memory" in json.loads(host.file(f"{STACK_WORKSPACE}/.mcp.json").content_string)["mcpServers"]
    log = Path(runs.first[1]["log"]).read_text()
    loaded = log.split("TASK [docker : Load its images into the engine]", 1)[1].split("TASK", 1)[0]
    assert "changed: [fleet-a]" in loaded
    assert host.file("/var/tmp/memctl-images").mode == 0o700
    assert not host.file(f"/var/tmp/memctl-images/{fleet.images.name}").exists  # deleted once loaded


def test_down_takes_the_stack_project_off_its_machine(fleet: Fleet, runs: Runs, tmp_path: Path) -> None:
    """Last: `memctl down --inventory` with fleet-a's stack project only removes its bridge and,
    as no other stack project is left there, Valkey; the memory stays, the other projects too."""
    inventory = yamlfiles.load(fleet.write_inventory(tmp_path / "all.yml").read_text())
    a = inventory["all"]["hosts"]["fleet-a"]
    a["memctl_projects"] = [p for p in a["memctl_projects"] if p["slug"] == "fleet-a-stack"]
    inventory["all"]["hosts"] = {"fleet-a": a}
    (tmp_path / "stack.yml").write_text(yamlfiles.dump(inventory))
    code, _, output = fleet.memctl("down", "--inventory", str(tmp_path / "stack.yml"))
    assert code == 0, output
    host = fleet.targets[0].host()
    assert host.check_output("docker ps --all --format '{{.Names}}'") == ""
    assert not host.file(f"{STACK_WORKSPACE}/.mcp.json").exists  # memctl wrote it, nobody else
    assert host.file(f"{STACK_WORKSPACE}/.memory/bridge.token").exists
    assert host.file("/srv/src/alpha/.mcp.json").contains("memctl")
