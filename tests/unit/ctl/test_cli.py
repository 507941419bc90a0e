"""The memctl command line, run in-process and as the installed script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memctl.cli import cli


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["serve", "--help"], ["up", "--help"]])
def test_help_is_available_for_every_command(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0
    assert "Example:" in result.output


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("memctl, version ")


def test_up_reports_a_bad_store_url_with_exit_code_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["up", "--project", str(tmp_path), "--json"], env={"MEMCTL_ENTRY_STORE": "mongodb://x"}
    )
    assert result.exit_code == 2
    assert json.loads(result.output)["error"] == "ConfigError"
    assert "mongodb" in json.loads(result.output)["message"]


def test_serve_takes_the_knowledge_store_as_a_flag(tmp_path: Path) -> None:
    """Issue 14, finding 5: `serve` had --entry-store but no --knowledge-store."""
    result = CliRunner().invoke(cli, ["serve", "--project", str(tmp_path), "--knowledge-store", "ftp://x"])
    assert result.exit_code == 2
    assert "knowledge store scheme 'ftp' is not supported" in result.output


@pytest.mark.parametrize(
    "command", [["up", "--project"], ["init", "--project"], ["projects", "add"]], ids=lambda c: c[0]
)
def test_a_workspace_of_home_is_refused(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32, finding 4: a project command would take the home directory (or `/`, which
    check_workspace's unit test covers: a regression here would provision the real `/`)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(cli, [*command, str(tmp_path), "--json"])
    assert result.exit_code == 2, result.output
    assert "home directory" in json.loads(result.output)["message"]


def test_a_mistyped_command_gets_a_suggestion_and_the_usage_exit_code() -> None:
    """Issue 33: `memctl stauts` said only "No such command"."""
    result = CliRunner().invoke(cli, ["stauts"])
    assert result.exit_code == 2
    assert "No such command 'stauts'. Did you mean 'status'?" in result.stderr
    unknown = CliRunner().invoke(cli, ["xyzzy"])
    assert unknown.exit_code == 2 and "No such command 'xyzzy'." in unknown.stderr
    assert "Did you mean" not in unknown.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_script_for_each_shell(shell: str) -> None:
    """Issue 33: there was no way to get shell completion."""
    result = CliRunner().invoke(cli, ["completion", shell], catch_exceptions=False)
    assert result.exit_code == 0
    assert f"_MEMCTL_COMPLETE={shell}_complete" in result.stdout
    if shell == "bash":
        assert "complete -o nosort -F _memctl_completion memctl" in result.stdout
    help_text = CliRunner().invoke(cli, ["completion", "--help"]).output
    assert "~/.local/share/bash-completion/completions/memctl" in help_text


def test_completion_protocol_offers_a_command_from_its_prefix() -> None:
    """What the bash script runs on Tab: `memctl sta<Tab>` offers `status`."""
    env = {"_MEMCTL_COMPLETE": "bash_complete", "COMP_WORDS": "memctl sta", "COMP_CWORD": "1"}
    result = CliRunner().invoke(cli, [], env=env, prog_name="memctl", catch_exceptions=False)
    assert result.exit_code == 0
    assert result.stdout.split() == ["plain,status"]
