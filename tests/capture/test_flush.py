"""`memctl flush` in the foreground: the codex CLI, an OpenAI-compatible server, and a
store that cannot be reached."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memctl.capture import _flush
from memctl.capture._lock import FileLock
from memctl.capture._paths import CaptureDirs
from memctl.cli import cli

from .fakes import atoms_reply, capture_env, install_fake, openai_server
from .helpers import FIXTURES, documents, memctl
from .test_hooks import DECISION, LORE


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / ".memory").mkdir(parents=True)
    return root


def test_codex_reads_the_prompt_on_stdin_and_its_rollout_is_understood(project: Path, tmp_path: Path) -> None:
    codex = install_fake(tmp_path / "bin", "codex")
    codex.script(atoms_reply(DECISION))
    env = capture_env(codex.bin_dir, MEMCTL_CAPTURE_PROVIDER="codex")

    run = memctl(project, env, "flush", "--transcript", str(FIXTURES / "codex-rollout.jsonl"))

    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert (result["outcome"], result["turns"], result["atoms"]) == ("distilled", 2, 1)
    assert result["delivered"] == [result["daily"]]
    [call] = codex.calls()
    assert call["argv"][1:] == ["exec", "--json", "--skip-git-repo-check", "-"]
    assert "drop the last row" in call["stdin"] and "never flushed" in call["stdin"]
    assert "environment_context" not in call["stdin"] and "cat export.py" not in call["stdin"]
    assert call["stdin"].count("drop the last row") == 1  # the event_msg echo is not a second turn


def test_an_openai_compatible_server_at_a_base_url(project: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "s.jsonl"
    transcript.write_text((FIXTURES / "claude-session.jsonl").read_text())
    with openai_server("```json\n" + atoms_reply(LORE)["text"] + "\n```") as server:
        env = capture_env(
            tmp_path / "bin",
            MEMCTL_CAPTURE_PROVIDER="openai",
            MEMCTL_CAPTURE_BASE_URL=server.url,
            MEMCTL_CAPTURE_MODEL="llama3.2",
        )
        run = memctl(project, env, "flush", "--transcript", str(transcript))
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["outcome"] == "distilled"
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] is None
    assert request["body"]["model"] == "llama3.2"
    system, user = request["body"]["messages"]
    assert '{"atoms": []}' in system["content"] and "httpOnly cookie" in user["content"]
    [daily] = documents(project, "daily")
    assert "Staging database is db2" in daily.text


def test_the_anthropic_api_with_a_key_from_a_private_file(project: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "s.jsonl"
    transcript.write_text((FIXTURES / "claude-session.jsonl").read_text())
    key = tmp_path / "anthropic.key"
    key.write_text("sk-ant-test-0123456789\n")
    key.chmod(0o600)
    with openai_server(atoms_reply(LORE)["text"]) as server:
        env = capture_env(
            tmp_path / "bin",
            MEMCTL_CAPTURE_PROVIDER="anthropic",
            MEMCTL_CAPTURE_BASE_URL=server.url.removesuffix("/v1"),
            MEMCTL_CAPTURE_API_KEY_FILE=str(key),
        )
        run = memctl(project, env, "flush", "--transcript", str(transcript))
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["outcome"] == "distilled"
    [request] = server.requests
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == "sk-ant-test-0123456789"
    assert request["headers"]["anthropic-version"] == "2023-06-01"
    assert '{"atoms": []}' in request["body"]["system"]
    assert "httpOnly cookie" in request["body"]["messages"][0]["content"]
    assert "sk-ant-test" not in run.stdout + run.stderr
    [daily] = documents(project, "daily")
    assert "Staging database is db2" in daily.text


def test_a_flush_while_the_store_is_busy_is_queued_and_lands_later(project: Path, tmp_path: Path) -> None:
    claude = install_fake(tmp_path / "bin", "claude")
    claude.script(atoms_reply(DECISION))
    env = capture_env(claude.bin_dir, MEMCTL_CAPTURE_PROVIDER="claude")
    assert documents(project, "daily") == []  # creates the embedded store
    transcript = tmp_path / "s.jsonl"
    transcript.write_text((FIXTURES / "claude-session.jsonl").read_text())
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_WRITE_LOCK, str(project / ".memory" / "knowledge.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        busy = memctl(project, env, "flush", "--transcript", str(transcript))
    finally:
        holder.communicate("")
    assert busy.returncode == 0, busy.stderr
    queued = json.loads(busy.stdout)
    assert queued["outcome"] == "distilled" and queued["queued"] == 1 and "busy" in queued["store_error"]

    later = memctl(project, env, "flush", "--transcript", str(transcript))
    landed = json.loads(later.stdout)
    assert landed["outcome"] == "nothing-new" and landed["delivered"] == [queued["daily"]]
    assert [doc.name for doc in documents(project, "daily")] == [queued["daily"]]
    assert len(claude.calls()) == 1


_HOLD_WRITE_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


def test_flush_refuses_a_missing_transcript_and_a_missing_provider(project: Path, tmp_path: Path) -> None:
    env = capture_env(tmp_path / "bin")
    missing = memctl(project, env, "flush", "--transcript", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "nope.jsonl" in missing.stderr and "does not exist" in missing.stderr
    off = memctl(project, env, "flush", "--transcript", str(FIXTURES / "claude-session.jsonl"))
    assert off.returncode == 2 and "no capture provider configured" in json.loads(off.stdout)["message"]


def test_a_flush_whose_session_another_flush_holds_exits_locked(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exit 15, the status of a lock another run holds (it was 4 before exit codes became one
    table, where 4 means a conflict); nothing is asked nor written."""

    class NoWait(FileLock):
        def acquire(self, *, wait: float = 0.0, poll: float = 0.2) -> bool:
            return super().acquire(wait=0.0, poll=poll)

    monkeypatch.setattr(_flush, "FileLock", NoWait)
    for name, value in capture_env(
        tmp_path / "bin",
        MEMCTL_CAPTURE_PROVIDER="openai",
        MEMCTL_CAPTURE_BASE_URL="http://127.0.0.1:9/v1",
        MEMCTL_CAPTURE_MODEL="none",
    ).items():
        monkeypatch.setenv(name, value)
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text((FIXTURES / "claude-session.jsonl").read_text())
    held = FileLock(CaptureDirs(project).session_lock("s1"), "another flush")
    assert held.acquire()
    try:
        args = ["flush", "--project", str(project), "--transcript", str(transcript), "--json"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
    finally:
        held.release()
    assert result.exit_code == 15, result.output
    report = json.loads(result.stdout)
    assert (report["ok"], report["outcome"], report["turns"]) == (False, "busy", 0)
    assert documents(project, "daily") == []
