"""A new user's first minutes: configs real clients can start, directories found like git,
and commands that only look never create anything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from memctl.provision._content import content_root

from ..bridges import bridge_env
from .helpers import PLAIN_PATH, memctl, rendered_server, up_json, write_inventory

pytestmark = pytest.mark.anyio

COMMITTED = (".mcp.json", ".claude/settings.json", ".cursor/mcp.json", ".vscode/mcp.json")
"""The files a team commits: none may hold this machine's paths."""


async def test_every_rendered_server_starts_from_a_plain_path_in_the_project(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    report = up_json("--project", str(workspace), state=tmp_path / "state")
    proofs = report["projects"][0]["proof"]
    assert {f for p in proofs for f in p["files"]} == {
        ".mcp.json",
        ".agents/mcp.json",
        ".cursor/mcp.json",
        ".vscode/mcp.json",
    }
    assert all(p["ok"] and p["tools"] > 0 for p in proofs), proofs
    for file in (".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json", ".agents/mcp.json"):
        async with Client(rendered_server(workspace, file), mode="legacy") as client:
            assert (await client.list_tools()).tools, file
    launcher = Path.home() / ".local/bin/memctl"
    assert launcher.stat().st_mode & 0o777 == 0o700
    hooks = json.loads((workspace / ".claude/settings.json").read_text())["hooks"]
    for entries in hooks.values():
        for hook in entries[0]["hooks"]:
            run = subprocess.run(
                ["sh", "-c", hook["command"]],
                input=json.dumps({"session_id": "s", "cwd": str(workspace), "hook_event_name": "x"}),
                env={"PATH": PLAIN_PATH, "HOME": str(Path.home())},
                cwd=workspace,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert run.returncode != 127 and "not found" not in run.stderr, (hook, run.stderr)


def test_committed_files_hold_no_path_of_this_machine(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    up_json("--project", str(workspace), state=tmp_path / "state")
    for file in COMMITTED:
        text = (workspace / file).read_text()
        assert str(workspace) not in text and str(Path.home()) not in text, (file, text)
        assert '"memctl"' not in text, "a bare command name works only where memctl is on PATH"
    gitignore = (workspace / ".gitignore").read_text()
    assert "/.agents/mcp.json" in gitignore, "the one file with an absolute path stays out of git"


def test_up_fails_loudly_when_a_client_could_not_start_the_server(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    launcher = Path.home() / ".local/bin/memctl"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("#!/bin/sh\necho 'my own broken memctl' >&2\nexit 1\n")  # the user's, not ours
    launcher.chmod(0o755)
    run = memctl("up", "--project", str(workspace), "--json", state=tmp_path / "state")
    assert run.returncode == 6, run.stdout + run.stderr
    message = json.loads(run.stdout)["message"]
    assert ".mcp.json" in message and "my own broken memctl" in message
    assert launcher.read_text().startswith("#!/bin/sh\necho 'my own broken memctl'"), (
        "the user's file is kept"
    )
    doctor = memctl("doctor", "--project", str(workspace), "--json", state=tmp_path / "state")
    failing = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "client start"]
    assert failing and all(c["status"] == "fail" for c in failing)


def test_up_refuses_a_project_directory_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    run = memctl("up", "--project", str(missing), state=tmp_path / "state")
    assert run.returncode == 2 and "does not exist" in run.stderr
    assert not missing.exists()


def test_up_in_a_subdirectory_provisions_the_top_of_the_git_work_tree(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    (workspace / "src" / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    run = subprocess.run(
        [sys.executable, "-m", "memctl", "up", "--json", "--client", "claude"],
        cwd=workspace / "src" / "pkg",
        env=bridge_env(MEMCTL_STATE_DIR=str(tmp_path / "state")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["projects"][0]["workspace"] == str(workspace)
    assert (workspace / ".memory").is_dir() and not (workspace / "src" / ".memory").exists()


def test_up_as_a_user_whose_name_is_no_account_keeps_ansibles_files_in_its_home(tmp_path: Path) -> None:
    """$USER naming no account (a container's made-up user, `su` keeping the caller's name)
    used to make Ansible put its temporary files in a literal `~name` directory beside the
    playbooks, which an installed package may not even let it write."""
    workspace, home, name = tmp_path / "repo", tmp_path / "home", "memctl-no-such-account"
    workspace.mkdir()
    home.mkdir()
    env = {"HOME": str(home), "USER": name, "LOGNAME": name}
    up_json("--project", str(workspace), "--client", "claude", state=tmp_path / "state", env=env)
    stray = [str(p) for p in (content_root() / "playbooks").glob("~*")]
    assert not stray, f"Ansible's temporary files went to {stray}"
    assert (home / ".ansible" / "tmp").is_dir()


def test_up_prints_every_path_whole_however_narrow_the_terminal(tmp_path: Path) -> None:
    """A path longer than the terminal is wrapped by the terminal, not broken by a newline
    in the middle, so the log or a file copied from the output can be opened."""
    workspace = tmp_path / ("a-project-with-a-name-longer-than-a-terminal-line-" * 2).rstrip("-")
    workspace.mkdir()
    state = tmp_path / "state"
    run = memctl("up", "--project", str(workspace), "--client", "claude", state=state, env={"COLUMNS": "60"})
    assert run.returncode == 0, run.stdout + run.stderr
    (log,) = (state / "runs").glob("*-site.log")
    for path in (log, workspace / ".mcp.json"):
        assert len(str(path)) > 60 and str(path) in run.stdout, f"{path} is not whole in:\n{run.stdout}"


def _in(directory: Path, *args: str, state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memctl", *args],
        cwd=directory,
        env=bridge_env(MEMCTL_STATE_DIR=str(state)),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_commands_that_only_look_create_nothing_and_find_the_project_above(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    state = tmp_path / "state"
    dry = _in(bare, "migrate", "--dry-run", "--json", state=state)
    assert dry.returncode == 0 and not (bare / ".memory").exists(), "a dry run creates nothing"
    for args in (
        ("status",),
        ("backup", "-o", str(tmp_path / "b.tar.gz")),
        ("audit",),
        ("logs",),
        ("restore", "-i", str(tmp_path / "missing.tar.gz")),
    ):
        run = _in(bare, *args, state=state)
        assert run.returncode != 0, args
        assert not (bare / ".memory").exists(), f"memctl {' '.join(args)} created a store"
    serve = _in(bare, "serve", state=state)
    assert serve.returncode == 3 and "memctl up" in serve.stderr
    assert not (bare / ".memory").exists()

    workspace = tmp_path / "app"
    (workspace / "src" / "pkg").mkdir(parents=True)
    up_json("--project", str(workspace), "--client", "claude", state=state)
    status = _in(workspace / "src" / "pkg", "status", "--json", state=state)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["project"] == str(workspace)
    assert not (workspace / "src" / "pkg" / ".memory").exists()


def test_a_broken_yaml_inventory_is_one_line_naming_file_line_and_column(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n    localhost:\n      memctl_projects:\n        - slug: a\n       bad: [\n"
    )
    run = memctl("up", "--inventory", str(inventory), state=tmp_path / "state")
    assert run.returncode == 2
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"{inventory}:6:" in lines[0], run.stderr


def test_error_text_with_square_brackets_is_printed_as_it_is(tmp_path: Path) -> None:
    inventory = write_inventory(tmp_path / "hosts.yml", [{"slug": "Bad Slug!", "workspace": str(tmp_path)}])
    run = memctl("up", "--inventory", str(inventory), state=tmp_path / "state")
    assert run.returncode == 2
    assert "[a-z0-9]" in run.stderr, run.stderr


def test_logs_show_the_runs_of_this_project_not_of_another_with_the_same_name(tmp_path: Path) -> None:
    state = tmp_path / "state"
    mine, other = tmp_path / "mine" / "app", tmp_path / "other" / "app"
    for workspace in (mine, other):
        workspace.mkdir(parents=True)
    up_json("--project", str(mine), "--client", "claude", state=state)
    up_json("--project", str(other), "--client", "claude", state=state)
    run = memctl("logs", "--project", str(mine), "--source", "runs", "--json", state=state)
    assert run.returncode == 0, run.stderr
    [source] = json.loads(run.stdout)["sources"]
    newest_other = max((state / "runs").glob("*.log"), key=lambda p: p.stat().st_mtime)
    assert source["path"] != str(newest_other), "the newest run is the other project's"


def test_up_counts_every_file_and_down_gives_the_workspace_back(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    mine = '{\n    "mcpServers": {"mine": {"command": "my-server"}},\n    "extra": [1, 2]\n}'
    (workspace / ".mcp.json").write_text(mine)
    (workspace / "README.md").write_text("hello\n")
    report = up_json("--project", str(workspace), state=tmp_path / "state")
    files = report["projects"][0]["files"]
    written = [f for f in files if f["action"] in ("created", "updated")]
    assert len(written) >= 15 and report["changed"] >= len(written), "changed= counts files, not tasks"
    assert (
        (workspace / ".mcp.json")
        .read_text()
        .startswith('{\n    "mcpServers": {"mine": {"command": "my-server"}')
    ), "the user's bytes are kept"

    down = memctl("down", "--project", str(workspace), "--json", state=tmp_path / "state")
    assert down.returncode == 0, down.stderr
    assert json.loads(down.stdout)["changed"] >= len(written) - 2
    left = sorted(p.name for p in workspace.iterdir())
    assert left == [".gitignore", ".mcp.json", ".memory", "README.md"], left
    assert (workspace / ".mcp.json").read_text() == mine
    assert "/.memory/" in (workspace / ".gitignore").read_text(), "kept while .memory/ is"

    purge = memctl("down", "--project", str(workspace), "--purge", "--yes", state=tmp_path / "state")
    assert purge.returncode == 0, purge.stderr
    assert sorted(p.name for p in workspace.iterdir()) == [".mcp.json", "README.md"]
