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
    assert report["mcp_json"]["mcpServers"]["memory"]["args"] == ["serve", "--project", str(tmp_path)]
    again = subprocess.run(
        [sys.executable, "-m", "memctl", "up", "--project", str(tmp_path), "--json"],
        env=bridge_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(again.stdout)["saved"] == "already present"


def test_up_reports_a_bad_store_url_with_exit_code_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["up", "--project", str(tmp_path), "--json"], env={"MEMCTL_ENTRY_STORE": "mongodb://x"}
    )
    assert result.exit_code == 2
    assert json.loads(result.output)["error"] == "ConfigError"
    assert "mongodb" in json.loads(result.output)["message"]
