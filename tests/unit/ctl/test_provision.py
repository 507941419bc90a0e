"""Which projects of a fleet failed, and why: a machine's failure is its projects' (issue 17)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ansible_collections.memctl.stack.plugins.callback.events import _failure
from memctl._errors import PlaybookFailed
from memctl.api.status import problems
from memctl.cli import cli
from memctl.provision._inventory import Inventory, Machine, Project
from memctl.provision._playbook import PlaybookRun
from memctl.provision._provision import _per_project, failed_projects, limited
from memory_bridge import ConfigError


def _inventory() -> Inventory:
    def machine(name: str, *slugs: str) -> Machine:
        return Machine(name, False, tuple(Project(slug=s, workspace=f"/srv/{s}") for s in slugs))

    return Inventory(Path("hosts.yml"), (machine("a", "a1", "a2"), machine("b", "b1"), machine("c", "c1")))


def _failed(host: str, status: str, task: str, msg: str) -> dict[str, object]:
    return {"host": host, "task": task, "status": status, "msg": msg, "changed": False}


def test_a_machine_that_fails_fails_each_of_its_projects_and_no_other() -> None:
    run = PlaybookRun("site", Path("run.log"))
    run.results = [
        _failed("a", "unreachable", "Find the machine's Python", "ssh: connection refused"),
        _failed("c1", "failed", "Migrate the stores", "disk full"),
        {"host": "b1", "task": "Migrate the stores", "status": "ok", "changed": False},
    ]
    assert failed_projects(_inventory(), run) == {
        "a1": "a unreachable at Find the machine's Python: ssh: connection refused",
        "a2": "a unreachable at Find the machine's Python: ssh: connection refused",
        "c1": "failed at Migrate the stores: disk full",
    }


def _ok(host: str, task: str) -> dict[str, object]:
    return {"host": host, "task": task, "status": "ok", "changed": False}


def test_an_upgrade_stopped_in_a_later_play_does_not_call_a_machine_upgraded() -> None:
    """a is installed, checked and re-rendered; b is installed and checked, then its bridge
    fails to come back; c's install never ran: only a is upgraded."""
    run = PlaybookRun("upgrade", Path("run.log"))
    run.recap = {host: {} for host in ("a", "b", "a1", "a2", "b1")}
    install = "memctl_install : Install memctl and its dependencies"
    run.results = [
        _ok("a", install),
        _ok("b", install),
        _failed("b1", "failed", "Check that the bridge answers /health before the next one moves", "503"),
        _ok("a1", "client_config : Render the client configs"),
        _ok("a2", "client_config : Render the client configs"),
    ]
    message = _per_project(_inventory(), PlaybookFailed("failed", run), "upgrade")
    assert message.splitlines()[2:] == [
        "upgraded: a (a1, a2)",
        "not touched: c (c1)",
        "full log: run.log",
    ]
    run.results = run.results[:3]  # the run stopped before any project was re-rendered
    message = _per_project(_inventory(), PlaybookFailed("failed", run), "upgrade")
    assert message.splitlines()[2:] == [
        "upgraded: none",
        "memctl installed and checked, services and settings not moved yet: a (a1, a2)",
        "not touched: c (c1)",
        "full log: run.log",
    ]


def test_limit_keeps_the_named_machines_and_refuses_an_unknown_one() -> None:
    assert [m.name for m in limited(_inventory(), ("b", "c")).machines] == ["b", "c"]
    assert limited(_inventory(), ()) == _inventory()
    with pytest.raises(
        ConfigError, match=r"--limit: z is not a machine of hosts.yml \(its machines: a, b, c\)"
    ):
        limited(_inventory(), ("b", "z"))


def test_limit_needs_an_inventory(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["up", "--project", str(tmp_path), "--limit", "a", "--json"])
    assert result.exit_code == 2 and "--limit needs --inventory" in result.output


def test_what_keeps_a_project_from_being_healthy_is_named() -> None:
    healthy = {"stores": [{"store": "entries", "healthy": True}], "clients": [{"files": ["a"], "ok": True}]}
    assert problems({**healthy, "ok": True}) == []
    assert problems({"ok": False, "error": "no settings in /srv/x"}) == ["no settings in /srv/x"]
    report = {
        "stores": [
            {"store": "entries", "healthy": False, "error": "locked"},
            {"store": "knowledge", "healthy": True},
        ],
        "outbox": {"dead_lettered": 2},
        "clients": [{"files": [".mcp.json"], "ok": False, "error": "exited with 3"}],
        "bridge": {"container": "memctl-bridge-app", "health": "unhealthy"},
    }
    assert problems(report) == [
        "entries store: locked",
        "2 writes to Dify dead-lettered",
        ".mcp.json: exited with 3",
        "bridge container memctl-bridge-app: unhealthy",
    ]


def test_a_loop_that_fails_is_reported_by_its_failed_items() -> None:
    loop = {
        "failed": True,
        "msg": "One or more items failed",
        "results": [{"failed": False}, {"failed": True, "msg": "b1 is not healthy: x"}, {"failed": True}],
    }
    assert _failure(loop) == "b1 is not healthy: x; failed"
