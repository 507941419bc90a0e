"""`memctl maintain`: steps in order, a lock, a step timeout, one redacted record per run."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from click.testing import CliRunner, Result

from memctl._errors import EXIT_CODES, MaintenanceLocked
from memctl.capture._lock import FileLock
from memctl.cli import cli
from memctl.operations._maintain import PASSES
from memory_bridge.maintenance import maintain_dir

from ..capture.fakes import FakeCli, capture_env, install_fake
from ..capture.test_compile import _seed
from ..capture.test_hooks import DECISION, LORE
from ..day2.stores import seed_documents

SECRET = "sk-ant-" + "a1" * 20


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / ".memory").mkdir(parents=True)
    return root


@pytest.fixture
def claude(tmp_path: Path) -> FakeCli:
    return install_fake(tmp_path / "bin", "claude")


def maintain(project: Path, env: dict[str, str], *args: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["maintain", "--project", str(project), "--json", *args], env=env)
    return result, json.loads(result.stdout)


def records(project: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(maintain_dir(project).glob("logs/*/*/run-*.json"))]


def test_a_run_compiles_runs_every_pass_and_records_itself(project: Path, claude: FakeCli) -> None:
    anyio.run(_seed, project, [LORE])
    env = capture_env(claude.bin_dir, MEMCTL_CAPTURE_PROVIDER="claude")

    result, report = maintain(project, env)

    assert result.exit_code == 0, result.output
    steps = {s["name"]: s for s in report["steps"]}
    assert next(iter(steps)) == "compile" and steps["compile"]["outcome"] == "ok"
    assert "compiled 1" in steps["compile"]["detail"]
    assert [s["name"] for s in report["steps"]] == [p.name for p in PASSES]  # every pass, in order
    assert all(s["outcome"] in ("ok", "skipped") for s in report["steps"]), report["steps"]
    assert steps["llm-merge-near-duplicates"]["outcome"] == steps["llm-semantic-refresh"]["outcome"] == "ok"
    assert report["ok"] is True and report["dry_run"] is False
    [record] = records(project)
    assert record["run_id"] == report["run_id"] and record["trigger"] == "manual"
    runs = (maintain_dir(project) / "runs.jsonl").read_text().splitlines()
    assert json.loads(runs[-1])["steps"]["compile"] == "ok"
    for path in [maintain_dir(project), *maintain_dir(project).rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path


def test_text_output_has_one_line_per_step(project: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["maintain", "--project", str(project), "--passes", "compile,staleness-flag,llm-semantic-refresh"],
        env=capture_env(project),
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "  compile: skipped: capture is off (capture_provider = none)" in lines
    assert "  staleness-flag: ok: nothing to do" in lines
    assert (
        "  llm-semantic-refresh: skipped: no LLM: capture is off (capture_provider = none); nothing asked"
        in (" ".join(lines))
    )


def test_dry_run_writes_nothing_and_takes_no_lock(project: Path, claude: FakeCli) -> None:
    anyio.run(_seed, project, [LORE])
    env = capture_env(claude.bin_dir, MEMCTL_CAPTURE_PROVIDER="claude")
    held = FileLock(maintain_dir(project) / "maintain.lock", "test")
    assert held.acquire()
    try:
        result, report = maintain(project, env, "--dry-run", "--passes", "compile")
    finally:
        held.release()
    assert result.exit_code == 0, result.output
    assert report["dry_run"] is True and report["steps"][0]["outcome"] == "dry-run"
    assert records(project) == [] and claude.calls() == []
    assert sorted(p.name for p in maintain_dir(project).iterdir()) == []


def test_a_second_run_while_one_holds_the_lock_does_nothing(project: Path) -> None:
    held = FileLock(maintain_dir(project) / "maintain.lock", "test")
    assert held.acquire()
    try:
        result, report = maintain(project, capture_env(project))
    finally:
        held.release()
    assert result.exit_code == EXIT_CODES[MaintenanceLocked][0] == 15
    assert report["error"] == "MaintenanceLocked" and f"pid {os.getpid()}" in report["message"]
    assert records(project) == []


def test_a_step_past_its_timeout_is_killed_and_the_run_fails(project: Path, claude: FakeCli) -> None:
    anyio.run(_seed, project, [DECISION])  # a near-duplicate: compile asks the LLM
    claude.script({"hang": True})
    env = capture_env(claude.bin_dir, MEMCTL_CAPTURE_PROVIDER="claude", MEMCTL_CAPTURE_RETRIES="0")

    result, report = maintain(
        project, env, "--passes", "compile", "--step-timeout", "8s"
    )  # room to reach the LLM on a busy machine

    assert result.exit_code == 1, result.output
    [step] = report["steps"]
    assert step["outcome"] == "timeout" and step["error"] == "timed out after 8 s"
    assert report["error"] == "compile: timed out after 8 s"
    assert records(project)[0]["signature"] == "compile-timed-out-after-n-s"
    assert len(claude.calls()) == 1  # the LLM was asked, then killed with compile
    assert live_processes_under(claude.bin_dir) == [], "the LLM CLI (a session of its own) outlived the step"


def live_processes_under(directory: Path) -> list[int]:
    """Processes (not zombies) whose command line names a file in `directory`."""
    return [
        process.pid
        for process in psutil.process_iter(["cmdline", "status"])
        if process.info["status"] != psutil.STATUS_ZOMBIE
        and any(str(directory) in part for part in process.info["cmdline"] or ())
    ]


def test_a_failing_step_is_recorded_redacted(project: Path, claude: FakeCli) -> None:
    anyio.run(_seed, project, [DECISION])
    env = capture_env(
        claude.bin_dir,
        MEMCTL_CAPTURE_PROVIDER="openai",
        MEMCTL_CAPTURE_BASE_URL=f"http://u:{SECRET}@127.0.0.1:9/v1",
    )
    result, report = maintain(project, env, "--passes", "compile")
    assert result.exit_code == 1
    assert report["steps"][0]["outcome"] == "failed" and report["steps"][0]["error"]
    text = "".join(p.read_text() for p in maintain_dir(project).rglob("*") if p.is_file())
    assert SECRET not in text and SECRET not in result.output


def test_if_due_skips_after_a_recent_success(project: Path) -> None:
    env = capture_env(project)
    result, first = maintain(project, env, "--if-due")
    assert result.exit_code == 0 and first["trigger"] == "schedule"
    result, second = maintain(project, env, "--if-due")
    assert result.exit_code == 0 and second["skipped"].startswith("not due: last success at")
    assert len(records(project)) == 1
    state = maintain_dir(project) / "state.json"
    old = json.loads(state.read_text())
    old["last_success_at"] = time.time() - 23 * 3600  # 90% of a day is due
    state.write_text(json.dumps(old))
    result, third = maintain(project, env, "--if-due")
    assert result.exit_code == 0 and "run_id" in third


def test_an_unknown_pass_is_refused_before_anything_runs(project: Path) -> None:
    result = CliRunner().invoke(cli, ["maintain", "--project", str(project), "--passes", "compile,shrink"])
    assert result.exit_code == 2
    assert "unknown pass shrink" in result.output and "staleness-flag" in result.output
    assert not maintain_dir(project).exists()


def test_the_report_names_each_item_changed_and_how(project: Path, a_year_later: None) -> None:
    """Issue 33: per item, its short ref and its change, with counts; --json lists the same."""
    lesson = {"atom_type": "self-improvement-lesson", "project_module": "api", "task_type": "bugfix"}
    lesson["error_pattern"] = "timeout"
    seed_documents(
        project,
        [
            ("knowledge", "a.md", "Same text.", {"atom_type": "project-lore"}, True),
            ("knowledge", "b.md", "Same text.", {"atom_type": "project-lore"}, True),
            ("self_improvement", "l1.md", "Retry.", lesson, True),
            ("self_improvement", "l2.md", "Retry with backoff.", lesson, True),
        ],
    )
    env = capture_env(project)
    passes = "dedupe-by-sha256,dedupe-by-lesson-key,staleness-flag"
    dry = CliRunner().invoke(
        cli, ["maintain", "--project", str(project), "--passes", passes, "--dry-run"], env=env
    )
    assert "    knowledge/a.md: would be archived (same text as knowledge/b.md)" in dry.output.splitlines()
    result, report = maintain(project, env, "--passes", passes)
    assert result.exit_code == 0, result.output
    assert [(c["step"], c["ref"], c["change"]) for c in report["changes"]] == [
        ("dedupe-by-sha256", "knowledge/a.md", "archived (same text as knowledge/b.md)"),
        (
            "dedupe-by-lesson-key",
            "self_improvement/l1.md",
            "archived (same lesson key as self_improvement/l2.md)",
        ),
        ("staleness-flag", "self_improvement/l2.md", "flagged stale"),
    ]
    assert all(len(c["id"]) == 36 for c in report["changes"])  # the full id beside the short ref
    assert report["counts"]["dedupe-by-sha256"] == {"archived": 1}
    assert report["counts"]["staleness-flag"] == {"flagged": 1}
    text = CliRunner().invoke(cli, ["maintain", "--project", str(project), "--passes", passes], env=env)
    assert "  staleness-flag: ok: nothing to do" in text.output.splitlines()  # done by the first run
    assert report["started_at"].endswith("+00:00") and "T" in report["started_at"]
    undone = CliRunner().invoke(
        cli, ["maintain", "--project", str(project), "--undo", report["run_id"]], env=env
    )
    assert "  restored knowledge/a.md" in undone.output.splitlines()
