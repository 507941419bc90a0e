"""`memctl status` and `memctl logs` for embedded projects, through the CLI as users run them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..capture.fakes import capture_env, install_fake
from ..provision.helpers import write_inventory
from .conftest import configure, memctl

SECRET = "sk-ant-api03-" + "A" * 40


def _capture_log(project: Path, *events: dict[str, object]) -> Path:
    log = project / ".memory" / "capture" / "capture.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    return log


def test_status_reports_stores_capture_last_compile_and_versions(tmp_path: Path) -> None:
    project = configure(tmp_path / "app", capture_provider="claude")
    fake = install_fake(tmp_path / "bin", "claude")
    compiled = subprocess.run(
        [sys.executable, "-m", "memctl", "compile", "--project", str(project), "--json"],
        env=capture_env(fake.bin_dir),
        capture_output=True,
        text=True,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stderr

    run = memctl("status", "--project", str(project), "--json")
    assert run.code == 0, run.stdout + run.stderr
    report = run.json
    # The fields `status` always had stay as they were.
    assert report["project"] == str(project) and report["ok"] is True
    assert [s["store"] for s in report["stores"]] == ["entries", "knowledge"]
    assert all(s["healthy"] for s in report["stores"])
    assert report["capture"]["provider"] == "claude" and report["capture"]["skipped"] is False
    # What is new: the capture outbox, the last compile, versions.
    assert report["capture"]["outbox"] == {"pending": 0, "failed": 0}
    assert report["capture"]["last_compile"]["stopped"] is None
    assert report["mode"] == "embedded" and "bridge" not in report
    versions = report["versions"]
    assert versions["memctl"] == memctl("--version").stdout.split()[-1]
    assert {kind: s["version"] == s["latest"] for kind, s in versions["schemas"].items()} == {
        "entries": True,
        "knowledge": True,
    }

    text = memctl("status", "--project", str(project))
    assert text.code == 0
    assert "last compile" in text.stdout and "entries store" in text.stdout


def test_status_of_an_inventory_covers_every_project(tmp_path: Path) -> None:
    good = configure(tmp_path / "good")
    broken = configure(tmp_path / "broken", entry_store="valkey://127.0.0.1:1/0")
    inventory = write_inventory(
        tmp_path / "inventory.yml",
        [{"slug": "good", "workspace": str(good)}, {"slug": "broken", "workspace": str(broken)}],
    )
    run = memctl("status", "--inventory", str(inventory), "--json")
    assert run.code == 5, run.stdout
    projects = {p["slug"]: p for p in run.json["projects"]}
    assert projects["good"]["ok"] is True
    assert projects["broken"]["ok"] is False
    entries = projects["broken"]["stores"][0]
    assert entries["healthy"] is False and "127.0.0.1:1" in entries["url"]
    assert run.json["ok"] is False


def test_status_refuses_two_targets() -> None:
    run = memctl("status", "--project", ".", "--all")
    assert run.code == 2 and "give one of --project, --inventory and --all" in run.stderr


def test_logs_show_the_capture_log_redacted_and_its_last_lines(tmp_path: Path) -> None:
    project = configure(tmp_path / "app")
    _capture_log(
        project,
        {"event": "flush", "outcome": "done"},
        {"event": "llm", "reason": f"provider said: api_key={SECRET}"},
    )
    run = memctl("logs", "--project", str(project), "--source", "capture", "--json")
    assert run.code == 0, run.stdout + run.stderr
    [capture] = run.json["sources"]
    assert capture["source"] == "capture" and len(capture["lines"]) == 2
    assert SECRET not in run.stdout and "[REDACTED]" in capture["lines"][1]

    last = memctl("logs", "--project", str(project), "--lines", "1")
    assert last.code == 0
    assert "flush" not in last.stdout and "REDACTED" in last.stdout and SECRET not in last.stdout


def test_logs_name_the_newest_run_log_of_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = configure(tmp_path / "app")
    runs = tmp_path / "state" / "runs"
    runs.mkdir(parents=True)
    (runs / "20250101-000000-1-site.log").write_text("PLAY RECAP\napp : ok=3 changed=1\n")
    (runs / "20250101-000000-1-site.projects.json").write_text(json.dumps({"workspaces": [str(project)]}))
    (runs / "20250101-000001-2-site.log").write_text("PLAY RECAP\napp : ok=3 changed=0\n")
    (runs / "20250101-000001-2-site.projects.json").write_text(json.dumps({"workspaces": ["/elsewhere/app"]}))
    monkeypatch.setenv("MEMCTL_STATE_DIR", str(tmp_path / "state"))
    run = memctl("logs", "--project", str(project), "--json")
    assert run.code == 0, run.stdout + run.stderr
    [found] = run.json["sources"]
    assert found["source"] == "runs" and found["path"].endswith("-1-site.log")
    assert found["lines"][-1] == "app : ok=3 changed=1"


def test_logs_without_any_log_exit_3(tmp_path: Path) -> None:
    project = configure(tmp_path / "quiet")
    run = memctl("logs", "--project", str(project), "--source", "capture", "--json")
    assert run.code == 3 and run.json["error"] == "NotFound"


def test_logs_follow_prints_new_capture_lines_as_json(tmp_path: Path) -> None:
    project = configure(tmp_path / "app")
    log = _capture_log(project, {"event": "flush", "outcome": "done"})
    process = subprocess.Popen(
        [sys.executable, "-m", "memctl", "logs", "--project", str(project), "--follow", "--json"],
        stdout=subprocess.PIPE,
        text=True,
        env=capture_env(tmp_path / "bin"),
    )
    try:
        assert process.stdout is not None
        first = json.loads(process.stdout.readline())
        assert first["source"] == "capture" and '"flush"' in first["line"]
        with log.open("a") as handle:
            handle.write(json.dumps({"event": "compile", "reason": f"token: {SECRET}"}) + "\n")
        new = json.loads(process.stdout.readline())
        assert new["source"] == "capture" and '"compile"' in new["line"] and SECRET not in new["line"]
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
