"""`memctl up` provisions projects through the site playbook, end to end, on this machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import testinfra
from mcp import Client

from memctl._errors import PlaybookFailed
from memctl.provision._inventory import load_inventory
from memctl.provision._provision import provision

from ..bridges import bridge_env, http_bridge
from .helpers import PLAIN_PATH, memctl, rendered_server, tree, up_json, write_inventory

pytestmark = pytest.mark.anyio

HOST = testinfra.get_host("local://")


def _project(report: dict[str, Any], slug: str | None = None) -> dict[str, Any]:
    records = report["projects"] if slug is None else [p for p in report["projects"] if p["slug"] == slug]
    assert len(records) == 1
    return records[0]


async def test_up_provisions_a_fresh_workspace_that_a_client_can_use(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text('{"mcpServers": {"mine": {"command": "my-server"}}}')
    first = up_json("--project", str(workspace), state=tmp_path / "state")
    record = _project(first)
    assert record["changed"] > 0 and record["smoke"]["saved"] == "created"
    assert record["smoke"]["found"] == "memctl/setup"

    # testinfra: files, modes and ownership as provisioned.
    memory = HOST.file(str(workspace / ".memory"))
    assert memory.is_directory and memory.mode == 0o700 and memory.uid == os.getuid()
    token = HOST.file(str(workspace / ".memory" / "bridge.token"))
    assert token.is_file and token.mode == 0o600 and token.uid == os.getuid()
    assert len(token.content_string.strip()) == 43
    for name in ("entries.db", "knowledge.db", "owned.json"):
        assert HOST.file(str(workspace / ".memory" / name)).is_file
    assert "/.memory/" in HOST.file(str(workspace / ".gitignore")).content_string

    before = tree(workspace)
    second = up_json("--project", str(workspace), state=tmp_path / "state")
    assert second["changed"] == 0, second
    assert _project(second)["smoke"]["saved"] == "already present"
    assert {f["action"] for f in _project(second)["files"]} == {"unchanged"}
    after = tree(workspace)
    config_files = {k for k in before if not k.startswith(".memory/") or k == ".memory/owned.json"}
    assert {k: after[k] for k in config_files} == {k: before[k] for k in config_files}, "byte-stable"
    assert after[".memory/bridge.token"] == before[".memory/bridge.token"], "the token is generated once"

    # A real MCP client, started exactly as the rendered .mcp.json entry says.
    servers = json.loads((workspace / ".mcp.json").read_text())["mcpServers"]
    assert servers["mine"] == {"command": "my-server"}, "the user's own server is untouched"
    async with Client(rendered_server(workspace), mode="legacy") as client:
        saved = await client.call_tool(
            "memory_set",
            {
                "id": "decisions/db",
                "title": "Database",
                "body": "We chose Postgres for billing.",
                "type": "decision",
                "tags": ["db"],
            },
        )
        assert not saved.is_error, saved.content
        found = await client.call_tool("memory_search", {"query": "which database for billing"})
        hits = [r["id"] for r in json.loads(found.content[0].text)["results"]]  # type: ignore[union-attr]
        assert "decisions/db" in hits


def test_check_diff_shows_the_changes_writes_nothing_and_hides_the_token(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    report = up_json("--project", str(workspace), "--check", "--diff", state=tmp_path / "state")
    assert report["check"] is True and report["changed"] > 0
    diffs = "\n".join(d["diff"] for d in _project(report)["diffs"])
    assert "+++ .mcp.json" in diffs and '"memory"' in diffs
    assert list(workspace.iterdir()) == [], "nothing written, no store created"

    up_json("--project", str(workspace), state=tmp_path / "state")
    token = (workspace / ".memory" / "bridge.token").read_text().strip()
    (workspace / ".memory" / "bridge.token").chmod(0o644)
    run = memctl("up", "--project", str(workspace), "--check", "--diff", "--json", state=tmp_path / "state")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["changed"] == 1, "the token's loose mode would be fixed"
    assert (workspace / ".memory" / "bridge.token").stat().st_mode & 0o777 == 0o644, (
        "check mode fixed nothing"
    )
    logs = "".join(p.read_text() for p in (tmp_path / "state" / "runs").iterdir())
    assert token not in run.stdout + run.stderr + logs


def test_an_edited_owned_file_is_reported_and_left_alone(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    up_json("--project", str(workspace), "--client", "claude", state=tmp_path / "state")
    skill = workspace / ".claude" / "skills" / "memory-save" / "SKILL.md"
    skill.write_text("my own words\n")
    report = up_json("--project", str(workspace), "--client", "claude", state=tmp_path / "state")
    actions = {Path(f["path"]).name: f["action"] for f in _project(report)["files"]}
    assert actions["SKILL.md"] in ("edited-left-alone", "unchanged")
    assert any("edited since memctl wrote it" in w for w in _project(report)["warnings"])
    assert skill.read_text() == "my own words\n"
    assert report["changed"] == 0


def test_three_projects_from_one_inventory_each_with_its_own_store_and_token(tmp_path: Path) -> None:
    workspaces = {slug: tmp_path / slug for slug in ("alpha", "beta", "gamma")}
    for path in workspaces.values():
        path.mkdir()
    inventory = write_inventory(
        tmp_path / "inventory.yml",
        [{"slug": slug, "workspace": str(path), "clients": ["claude"]} for slug, path in workspaces.items()],
    )
    report = up_json("--inventory", str(inventory), state=tmp_path / "state")
    assert sorted(p["slug"] for p in report["projects"]) == ["alpha", "beta", "gamma"]
    assert all(p["changed"] > 0 and p["smoke"]["saved"] == "created" for p in report["projects"])
    tokens = {
        slug: (path / ".memory" / "bridge.token").read_text().strip() for slug, path in workspaces.items()
    }
    assert len(set(tokens.values())) == 3
    stores = {_project(report, slug)["entry_store"] for slug in workspaces}
    assert len(stores) == 3 and all(
        str(workspaces[s]) in _project(report, s)["entry_store"] for s in workspaces
    )

    assert up_json("--inventory", str(inventory), state=tmp_path / "state")["changed"] == 0

    with http_bridge(workspaces["alpha"]) as alpha, http_bridge(workspaces["beta"]) as beta:
        for bridge, own, other in ((alpha, "alpha", "beta"), (beta, "beta", "alpha")):
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "memory_get", "arguments": {"id": "memctl/setup"}},
            }
            headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
            refused = httpx.post(
                bridge.mcp_url, json=call, headers={**headers, "Authorization": f"Bearer {tokens[other]}"}
            )
            assert refused.status_code == 401, f"{other}'s token must not read {own}'s memory"
            anonymous = httpx.post(bridge.mcp_url, json=call, headers=headers)
            assert anonymous.status_code == 401


@pytest.mark.parametrize(
    ("project", "field"),
    [
        ({"mode": "stak"}, "localhost.memctl_projects[0].mode"),
        ({"workspace": "relative/dir"}, "localhost.memctl_projects[0].workspace"),
        ({"clients": ["emacs"]}, "localhost.memctl_projects[0].clients[0]"),
        ({"colour": "blue"}, "localhost.memctl_projects[0].colour"),
        ({"bridge_workers": 0}, "localhost.memctl_projects[0].bridge_workers"),
    ],
)
def test_an_invalid_project_fails_before_anything_changes(
    tmp_path: Path, project: dict[str, Any], field: str
) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    inventory = write_inventory(
        tmp_path / "inv.yml", [{"slug": "app", "workspace": str(workspace), **project}]
    )
    run = memctl("up", "--inventory", str(inventory), "--json", state=tmp_path / "state")
    assert run.returncode == 2, run.stdout
    assert field in json.loads(run.stdout)["message"]
    assert list(workspace.iterdir()) == []


def test_duplicate_slugs_missing_workspaces_and_taken_ports_are_refused(tmp_path: Path) -> None:
    import socket

    here = tmp_path / "here"
    here.mkdir()
    duplicate = write_inventory(
        tmp_path / "dup.yml",
        [{"slug": "app", "workspace": str(here)}, {"slug": "app", "workspace": str(here)}],
    )
    missing = write_inventory(
        tmp_path / "missing.yml", [{"slug": "app", "workspace": str(tmp_path / "nope")}]
    )
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        taken = write_inventory(
            tmp_path / "port.yml",
            [{"slug": "app", "workspace": str(here), "mode": "stack", "bridge_port": port}],
        )
        other = tmp_path / "other"
        other.mkdir()
        same_port = write_inventory(
            tmp_path / "ports.yml",
            [
                {"slug": "one", "workspace": str(here), "mode": "stack"},
                {"slug": "two", "workspace": str(other), "mode": "stack"},
            ],
        )
        expectations = {
            same_port: "bridge_port 3106 is used by both 'one' and 'two'",
            duplicate: "slug 'app' is used twice",
            missing: "memctl_projects[0].workspace",
            taken: "memctl_projects[0].bridge_port: port",
        }
        for inventory, message in expectations.items():
            run = memctl("up", "--inventory", str(inventory), "--json", state=tmp_path / "state")
            assert run.returncode == 2 and message in json.loads(run.stdout)["message"], run.stdout
    assert list(here.iterdir()) == []


def test_a_run_killed_half_way_leaves_whole_files_and_the_next_run_completes(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    inventory = load_inventory(
        write_inventory(tmp_path / "inv.yml", [{"slug": "app", "workspace": str(workspace)}])
    )

    playbook: list[int] = []

    def kill_when_configuring(event: dict[str, Any]) -> None:
        if event["event"] == "started":
            playbook.append(event["pid"])
        if event["event"] == "task" and "MCP clients" in event["name"]:
            os.kill(playbook[0], signal.SIGKILL)

    os.environ["MEMCTL_STATE_DIR"] = str(tmp_path / "state")
    try:
        with pytest.raises(PlaybookFailed):
            provision(inventory, check=False, diff=False, on_event=kill_when_configuring)
    finally:
        del os.environ["MEMCTL_STATE_DIR"]
    for path in workspace.rglob("*.json"):
        json.loads(path.read_text())  # every file present is whole
    report = up_json("--inventory", str(inventory.path), state=tmp_path / "state")
    assert _project(report)["smoke"]["saved"] == "already present"
    assert json.loads((workspace / ".mcp.json").read_text())["mcpServers"]["memory"]


def test_down_takes_memctl_back_out_and_keeps_the_users_files(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    mine = '{"mcpServers": {"mine": {"command": "my-server"}}}'
    (workspace / ".mcp.json").write_text(mine)
    (workspace / ".gitignore").write_text("node_modules/\n")
    up_json("--project", str(workspace), state=tmp_path / "state")
    edited = workspace / ".claude" / "skills" / "memory-save" / "SKILL.md"
    edited.write_text("my own words\n")

    report = memctl("down", "--project", str(workspace), "--json", state=tmp_path / "state")
    assert report.returncode == 0, report.stdout + report.stderr
    record = _project(json.loads(report.stdout))
    assert json.loads((workspace / ".mcp.json").read_text()) == json.loads(mine)
    assert (workspace / ".mcp.json").read_text() == mine, "byte for byte"
    assert "/.memory/" in (workspace / ".gitignore").read_text(), "kept while .memory/ stays"
    assert not (workspace / ".agents" / "README.md").exists()
    assert not (workspace / ".claude" / "skills" / "memory-recall" / "SKILL.md").exists()
    assert edited.read_text() == "my own words\n", "an edited owned file is left alone"
    assert any(f["action"] == "edited-left-alone" for f in record["files"])
    assert not (workspace / ".cursor").exists(), "memctl created it; down takes it back out"
    assert (workspace / ".memory" / "entries.db").exists(), "memory is kept without --purge"

    again = memctl("down", "--project", str(workspace), "--json", state=tmp_path / "state")
    assert json.loads(again.stdout)["changed"] == 0

    refused = memctl("down", "--project", str(workspace), "--purge", "--json", state=tmp_path / "state")
    assert refused.returncode == 2 and (workspace / ".memory").exists()
    purged = memctl(
        "down", "--project", str(workspace), "--purge", "--yes", "--json", state=tmp_path / "state"
    )
    assert purged.returncode == 0 and not (workspace / ".memory").exists()
    assert (workspace / ".gitignore").read_text() == "node_modules/\n", "the block goes with the memory"

    # Issue 33: the help said the block left with the client configs; it says what happened above.
    told = " ".join(memctl("down", "--help", state=tmp_path / "state").stdout.split())
    assert "kept, and so is memctl's .gitignore block" in told
    assert "--purge deletes the memory and takes the block out of .gitignore" in told


def test_the_rendered_hooks_run_as_the_client_runs_them(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    up_json("--project", str(workspace), "--client", "claude", state=tmp_path / "state")
    hooks = json.loads((workspace / ".claude" / "settings.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "PreCompact", "PostCompact", "SessionEnd", "PostToolUse"}
    command = hooks["SessionStart"][0]["hooks"][0]["command"]
    assert str(workspace) not in command, "the client tells the hook its project"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**bridge_env(), "PATH": PLAIN_PATH, "CLAUDE_PROJECT_DIR": str(workspace)}
    started = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps({"session_id": "s-1", "source": "startup", "hook_event_name": "SessionStart"}),
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=60,
    )
    assert started.returncode == 0, started.stderr
    context = json.loads(started.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart" and "recall_lessons" in context["additionalContext"]

    no_hooks = tmp_path / "quiet"
    no_hooks.mkdir()
    up_json("--project", str(no_hooks), "--client", "claude", "--no-hooks", state=tmp_path / "state")
    assert "hooks" not in json.loads((no_hooks / ".claude" / "settings.json").read_text())
