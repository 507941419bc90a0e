"""The job's health: `cron_health` through an MCP client, `memctl status`, escalations.

The runs are real `memctl maintain` runs; only compile's process is replaced by one that
fails the way an unreachable store does, with a different path, pid and duration each
time (what the error signature must see past).
"""

from __future__ import annotations

import json
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from click.testing import CliRunner, Result
from mcp import Client

from memctl.cli import cli
from memctl.commands import _output
from memctl.operations import _maintain
from memory_bridge import build_server, load_settings, open_state
from memory_bridge.maintenance import maintain_dir

from ..capture.fakes import capture_env

pytestmark = pytest.mark.anyio

SECRET = "ghp_" + "A1b2" * 9


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / ".memory").mkdir(parents=True)
    return root


@pytest.fixture
async def client(project: Path) -> AsyncIterator[Client]:
    async with open_state(load_settings(project=project)) as state, Client(build_server(state)) as session:
        yield session


class Compile:
    """compile's process, scripted: fails with a varying store error until told to succeed."""

    def __init__(self) -> None:
        self.runs = 0
        self.error = "store"
        self.ok = False

    def __call__(self, argv: list[str], timeout: float) -> tuple[int, str, str]:
        self.runs += 1
        if self.ok:
            return 0, json.dumps({"dailies": 0, "counts": {}, "compiled": []}), ""
        if self.error == "store":
            message = (
                f"store sqlite:///tmp/run{self.runs}/.memory/knowledge.db unreachable after "
                f"{self.runs * 1.5} s (pid {4000 + self.runs}, token {SECRET})"
            )
        else:
            message = f"the capture LLM timed out after {self.runs * 10} s"
        return 5, json.dumps({"ok": False, "message": message}), ""


@pytest.fixture
def compile_(monkeypatch: pytest.MonkeyPatch) -> Compile:
    fake = Compile()
    monkeypatch.setattr(_maintain, "run_process", fake)
    return fake


def maintain(project: Path) -> dict[str, Any]:
    env = capture_env(project, MEMCTL_CAPTURE_PROVIDER="claude")
    result = CliRunner().invoke(
        cli, ["maintain", "--project", str(project), "--passes", "compile", "--json"], env=env
    )
    assert result.exit_code in (0, 1), result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


async def status(project: Path, *args: str) -> Result:
    """`memctl status` (its own event loop: in a thread, beside the test's)."""
    env = {**capture_env(project), "COLUMNS": "300"}
    command = ["status", "--project", str(project), *args]
    with pytest.MonkeyPatch.context() as patch:  # COLUMNS alone loses to an xdist worker's pipes
        patch.setattr(_output.console, "_width", 300)
        return await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, command, env=env))


async def health(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("cron_health", arguments)
    assert not result.is_error, result.content
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content
    return dict(json.loads(text))


async def test_cron_health_is_listed_read_only_with_the_seeds_argument(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    tool = tools["cron_health"]
    assert tool.annotations is not None and tool.annotations.read_only_hint is True
    assert set(tool.input_schema["properties"]) == {"limit"}
    refused = await client.call_tool("cron_health", {"limit": 0})
    assert refused.is_error


async def test_before_any_run_the_job_is_healthy_with_nothing_logged(client: Client) -> None:
    report = await health(client)
    assert report["ok"] and report["healthy"] and report["summary"] == "no maintenance runs logged yet"
    assert report["recent"] == [] and report["escalations"] == [] and report["lastAttempt"] is None


async def test_three_failures_with_one_signature_escalate_until_a_run_succeeds(
    project: Path, client: Client, compile_: Compile
) -> None:
    first, second = maintain(project), maintain(project)
    assert first["signature"] == second["signature"] and first["error"] != second["error"]
    assert (await health(client))["summary"].startswith("UNRESOLVED FAILURE at ")
    assert (await health(client))["escalations"] == []

    third = maintain(project)
    report = await health(client, limit=2)
    assert report["healthy"] is False and report["openEscalations"] == 1
    assert report["summary"].startswith("UNRESOLVED: 1 open escalation(s); newest report ")
    [escalation] = report["escalations"]
    assert escalation["status"] == "open" and escalation["signature"] == third["signature"]
    assert (
        escalation["signature"] == "compile-store-sqlite-path-unreachable-after-n-s-pid-n-token-ghp-redacted"
    )
    assert escalation["failures"] == 3
    assert [r["run_id"] for r in report["recent"]] == [second["run_id"], third["run_id"]]
    issue = Path(escalation["report"])
    assert issue.is_file() and stat.S_IMODE(issue.stat().st_mode) == 0o600
    assert "Maintenance escalation" in issue.read_text()
    everything = "".join(p.read_text() for p in maintain_dir(project).rglob("*") if p.is_file())
    assert SECRET not in everything and SECRET not in json.dumps(report)

    job = json.loads((await status(project, "--json")).stdout)["maintenance"]
    assert job["healthy"] is False and job["last_success_at"] is None and job["last_failure_at"]
    assert [e["signature"] for e in job["open_escalations"]] == [escalation["signature"]]
    text = await status(project)
    assert "open escalation" in text.output and escalation["signature"] in text.output

    maintain(project)  # still failing the same way: the same escalation, not a new one
    assert [e["failures"] for e in (await health(client))["escalations"]] == [4]

    compile_.ok = True
    fixed = maintain(project)
    assert fixed["ok"] is True
    report = await health(client)
    assert report["healthy"] is True and report["summary"].startswith("healthy: last run succeeded at")
    [resolved] = report["escalations"]
    assert resolved["status"] == "resolved" and resolved["resolved_at"]
    assert report["lastSuccessAt"] and report["lastFailureAt"]
    assert json.loads((await status(project, "--json")).stdout)["maintenance"]["open_escalations"] == []


async def test_another_error_breaks_the_streak(project: Path, client: Client, compile_: Compile) -> None:
    maintain(project)
    maintain(project)
    compile_.error = "llm"
    maintain(project)
    maintain(project)
    assert (await health(client))["escalations"] == []
    maintain(project)  # the third in a row with the LLM's signature
    [escalation] = (await health(client))["escalations"]
    assert escalation["signature"] == "compile-the-capture-llm-timed-out-after-n-s"
