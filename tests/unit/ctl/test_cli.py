"""The memctl command line, run in-process and as the installed script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memctl.cli import cli
from memory_bridge.tools._entries import ENTRY_TOOLS
from memory_bridge.tools._knowledge import KNOWLEDGE_TOOLS

from ...bridges import bridge_env


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["serve", "--help"], ["up", "--help"]])
def test_help_is_available_for_every_command(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0
    assert "Example:" in result.output


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("memctl, version ")


def test_up_provisions_and_round_trips_through_a_real_client(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"mine": {"command": "my-server"}}}')
    run = subprocess.run(
        [sys.executable, "-m", "memctl", "up", "--project", str(tmp_path), "--json"],
        env=bridge_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["ok"] is True and report["tools"] == len(ENTRY_TOOLS) + len(KNOWLEDGE_TOOLS)
    assert report["found"] == "memctl/setup" and report["saved"] == "created"
    registered = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert registered["mine"] == {"command": "my-server"}, "the user's own server is untouched"
    assert registered["memory"]["args"] == ["serve", "--project", str(tmp_path)]
    assert report["changed"] > 0
    again = subprocess.run(
        [sys.executable, "-m", "memctl", "up", "--project", str(tmp_path), "--json"],
        env=bridge_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    second = json.loads(again.stdout)
    assert second["saved"] == "already present"
    assert second["changed"] == 0 and {c["action"] for c in second["changes"]} == {"unchanged"}


def test_up_check_changes_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["up", "--project", str(tmp_path), "--check", "--diff", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["check"] is True and report["changed"] > 0
    assert any(c["path"].endswith(".mcp.json") and "diff" in c for c in report["changes"])
    assert list(tmp_path.iterdir()) == [], "nothing written, no store created"


def test_up_reports_a_bad_store_url_with_exit_code_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["up", "--project", str(tmp_path), "--json"], env={"MEMCTL_ENTRY_STORE": "mongodb://x"}
    )
    assert result.exit_code == 2
    assert json.loads(result.output)["error"] == "ConfigError"
    assert "mongodb" in json.loads(result.output)["message"]
