"""`memctl up --inventory` from a control node provisions projects on machines it reaches over
SSH, installing itself there first (issue 17). testinfra checks each machine over SSH."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..bridges import free_port
from .conftest import Fleet, Target

pytestmark = [pytest.mark.fleet]

Result = tuple[int, dict[str, Any], str]
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)
# What a run leaves on a machine, outside the stores' own files (which a read may touch).
SNAPSHOT = (
    "find /srv/src/alpha /root/.local/bin /opt/memctl/memctl-installed /opt/memctl/wheels "
    "-path /srv/src/alpha/.memory/memory -prune -o -type f -print0 | sort -z | xargs -0 sha256sum"
)


@dataclass
class Runs:
    first: Result
    second: Result
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


@pytest.fixture(scope="module")
def runs(fleet: Fleet) -> Runs:
    first = fleet.up()
    assert first[0] == 0, first[2]
    second = fleet.up()
    before = snapshot(fleet)
    check = fleet.up("--check", "--diff")
    return Runs(first, second, check, before, snapshot(fleet))


def test_the_first_run_installs_memctl_and_provisions_each_machine(fleet: Fleet, runs: Runs) -> None:
    code, report, output = runs.first
    assert code == 0, output
    assert {p["slug"]: p["machine"] for p in report["projects"]} == {
        "fleet-a-alpha": "fleet-a",
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
    code, report, output = runs.second
    assert code == 0, output
    assert report["changed"] == 0, recap(Path(report["log"]).read_text())


def test_check_diff_changes_nothing(runs: Runs) -> None:
    code, report, output = runs.check
    assert code == 0, output
    assert report["check"] is True and report["changed"] == 0
    assert runs.after_check == runs.before_check


def test_limit_touches_only_that_machine(fleet: Fleet, runs: Runs) -> None:
    a, b = (t.host() for t in fleet.targets)
    a.check_output("rm /srv/src/alpha/.mcp.json")
    b.check_output("mv /srv/src/alpha/.mcp.json /srv/src/alpha/.mcp.json.aside")
    code, report, output = fleet.up("--limit", "fleet-a")
    assert code == 0, output
    assert [p["slug"] for p in report["projects"]] == ["fleet-a-alpha"]
    assert set(recap(Path(report["log"]).read_text())) == {"fleet-a", "fleet-a-alpha"}
    assert a.file("/srv/src/alpha/.mcp.json").exists
    assert not b.file("/srv/src/alpha/.mcp.json").exists
    b.check_output("mv /srv/src/alpha/.mcp.json.aside /srv/src/alpha/.mcp.json")


def test_limit_names_an_unknown_machine(fleet: Fleet) -> None:
    code, report, _ = fleet.up("--limit", "fleet-z")
    assert code == 2 and "--limit: fleet-z is not a machine of" in report["message"]


def test_a_machine_or_project_that_fails_fails_only_its_own_projects(fleet: Fleet, runs: Runs) -> None:
    """fleet-gone cannot be reached; on fleet-b, a second project's workspace does not exist
    (checked there): both fail saying why, and the other projects finish."""
    gone = {"ansible_port": free_port(), "memctl_projects": [{"slug": "gone-alpha", "workspace": "/srv/a"}]}
    b = fleet.targets[1]
    projects = [
        {"slug": "fleet-b-alpha", "workspace": "/srv/src/alpha", "clients": ["claude"]},
        {"slug": "fleet-b-missing", "workspace": "/srv/src/missing"},
    ]
    extra = {"fleet-gone": gone, b.name: {"ansible_port": b.port, "memctl_projects": projects}}
    code, report, output = fleet.up(inventory=fleet.write_inventory(fleet.root / "failing.yml", extra))
    assert code == 6, output
    message = report["message"]
    assert message.startswith("2 of 4 projects failed:\n"), message
    assert "\n  gone-alpha: fleet-gone unreachable at memctl_install : Find the machine's Python" in message
    assert (
        "\n  fleet-b-missing: failed at bridge : Refuse a workspace that is not an existing directory: "
        in message
    )
    assert "workspace /srv/src/missing is not an existing directory on its machine" in message
    assert "\nfinished: fleet-a-alpha, fleet-b-alpha\nfull log: " in message
    hosts = recap(log_of(message))
    for name in ("fleet-a", "fleet-a-alpha", "fleet-b", "fleet-b-alpha"):
        assert hosts[name][1:] == (0, 0, 0), f"{name} changed or failed: {hosts[name]}"
    assert not b.host().file("/srv/src/missing").exists


def test_a_machine_without_python_3_11_is_refused_saying_so(fleet: Fleet, tmp_path: Path) -> None:
    target: Target = fleet.targets[0]
    target.host().check_output(
        "printf '#!/bin/sh\\necho 3.9.18\\n' > /usr/local/bin/old && chmod +x /usr/local/bin/old"
    )
    old = {"ansible_port": target.port, "memctl_install_python": "/usr/local/bin/old"}
    old["memctl_projects"] = [{"slug": "old-alpha", "workspace": "/srv/src/beta"}]
    inventory = fleet.write_inventory(tmp_path / "old.yml", {"fleet-old": old})
    code, report, output = fleet.up("--limit", "fleet-old", inventory=inventory)
    assert code == 6, output
    assert (
        "memctl needs Python 3.11 or later on fleet-old, and /usr/local/bin/old is 3.9.18"
        in report["message"]
    )
    assert not target.host().file("/srv/src/beta/.memory").exists


def test_status_probes_each_project_on_its_machine(fleet: Fleet, runs: Runs) -> None:
    """One machine cannot be reached: its project is reported failing, saying why; the others
    are probed on their machines by the memctl installed there."""
    gone = {"ansible_port": free_port(), "memctl_projects": [{"slug": "gone-alpha", "workspace": "/srv/a"}]}
    inventory = fleet.write_inventory(fleet.root / "status-gone.yml", {"fleet-gone": gone})
    code, report, output = fleet.memctl("status", "--inventory", str(inventory))
    assert code == 5 and report["ok"] is False, output
    projects = {p["slug"]: p for p in report["projects"]}
    assert set(projects) == {"fleet-a-alpha", "fleet-b-alpha", "gone-alpha"}
    assert projects["gone-alpha"]["ok"] is False and projects["gone-alpha"]["machine"] == "fleet-gone"
    assert projects["gone-alpha"]["error"].startswith("unreachable at "), projects["gone-alpha"]
    for slug in ("fleet-a-alpha", "fleet-b-alpha"):
        project = projects[slug]
        assert project["ok"] is True and project["machine"] == slug.removesuffix("-alpha"), project
        assert project["project"] == "/srv/src/alpha"
        assert all(store["healthy"] for store in project["stores"])
        assert all(client["ok"] for client in project["clients"])


def test_upgrade_goes_one_machine_at_a_time(fleet: Fleet, runs: Runs) -> None:
    code, report, output = fleet.memctl("upgrade", "--inventory", str(fleet.inventory))
    assert code == 0, output
    assert report["changed"] == 0
    log = Path(report["log"]).read_text()
    install = log.split("PLAY [Upgrade memctl on the machines", 1)[1].split("PLAY [Expand", 1)[0]
    assert install.count("TASK [memctl_install : Find the machine's Python and its version]") == 2


def test_upgrade_stops_at_the_first_machine_that_fails(fleet: Fleet, runs: Runs, tmp_path: Path) -> None:
    a = fleet.targets[0]
    a.host().check_output(
        "printf '#!/bin/sh\\necho 3.9.18\\n' > /usr/local/bin/old && chmod +x /usr/local/bin/old"
    )
    broken = {
        "ansible_port": a.port,
        "memctl_install_python": "/usr/local/bin/old",
        "memctl_projects": [{"slug": "fleet-a-alpha", "workspace": "/srv/src/alpha", "clients": ["claude"]}],
    }
    inventory = fleet.write_inventory(tmp_path / "broken.yml", {"fleet-a": broken})
    code, report, _ = fleet.memctl("upgrade", "--inventory", str(inventory))
    assert code == 6
    assert (
        "fleet-a-alpha: fleet-a failed at memctl_install : Refuse a machine without Python 3.11 or later"
        in report["message"]
    )
    assert "\nnot run: fleet-b-alpha\n" in report["message"]
    hosts = recap(log_of(report["message"]))
    assert hosts["fleet-a"][3] == 1 and "fleet-b" not in hosts  # fleet-b was never touched
