"""The hooks through the real subprocess path: a shell runs `memctl hook`, a detached
worker calls a scripted `claude` on PATH, and the embedded store ends up with the result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .fakes import FakeCli, atoms_reply, capture_env, install_fake
from .helpers import FIXTURES, documents, run_hook, wait_event

SESSION = "c1a2b3c4-0000-4000-8000-000000000001"

DECISION = {
    "type": "decision",
    "title": "Keep refresh tokens in httpOnly cookies",
    "body": "Refresh tokens live in an httpOnly cookie.\nWhy: scripts cannot read it.\n"
    "How to apply: never localStorage.",
    "tags": ["auth", "tokens"],
    "metadata": {"project_module": "auth", "language": "python", "task_type": "implementation"},
}
LESSON = {
    "type": "self-improvement-lesson",
    "title": "Run migrations before seeding",
    "body": "Migrate, then seed.\nWhy: the seed needs the new tables.\n"
    "How to apply: check the order in scripts.",
    "tags": ["database"],
    "metadata": {
        "project_module": "db",
        "task_type": "implementation",
        "error_pattern": "seed-before-migrate",
    },
}
LORE = {
    "type": "project-lore",
    "title": "Staging database is db2",
    "body": "Staging runs on db2 since 2026-11-30.\nWhy: db1 was retired.\n"
    "How to apply: point staging at db2.",
    "tags": ["staging"],
    "metadata": {"project_module": "infra", "task_type": "deploy"},
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / ".memory").mkdir(parents=True)
    return root


@pytest.fixture
def claude(tmp_path: Path) -> FakeCli:
    return install_fake(tmp_path / "bin", "claude")


def env_for(claude: FakeCli, **settings: str) -> dict[str, str]:
    return capture_env(claude.bin_dir, MEMCTL_CAPTURE_PROVIDER="claude", **settings)


def payload(transcript: Path, event: str) -> dict[str, Any]:
    cwd = str(transcript.parent / "src")  # the session may have moved below the project root
    return {"session_id": SESSION, "transcript_path": str(transcript), "cwd": cwd, "hook_event_name": event}


def wait_flushes(project: Path, count: int) -> list[dict[str, Any]]:
    from memctl.capture._log import read_events
    from memctl.capture._paths import CaptureDirs

    def done(_: dict[str, Any]) -> bool:
        events = read_events(CaptureDirs(project).log, 1000)
        return sum(e["event"] == "flush" and "outcome" in e for e in events) >= count

    wait_event(project, done)
    return [
        e for e in read_events(CaptureDirs(project).log, 1000) if e["event"] == "flush" and "outcome" in e
    ]


def test_a_growing_session_is_distilled_once_across_its_hooks(project: Path, claude: FakeCli) -> None:
    claude.script(atoms_reply(DECISION), atoms_reply(LESSON), atoms_reply(LORE))
    env = env_for(claude)
    transcript = project / "session.jsonl"
    transcript.write_text((FIXTURES / "claude-session.jsonl").read_text())

    front = run_hook(project, "pre-compact", payload(transcript, "PreCompact"), env)
    assert (front.returncode, front.stdout, front.stderr) == (0, "", "")
    wait_flushes(project, 1)
    with transcript.open("a") as handle:
        handle.write((FIXTURES / "claude-session-2.jsonl").read_text())
    assert run_hook(project, "post-compact", payload(transcript, "PostCompact"), env).returncode == 0
    wait_flushes(project, 2)
    with transcript.open("a") as handle:
        handle.write((FIXTURES / "claude-session-3.jsonl").read_text())
    assert run_hook(project, "session-end", payload(transcript, "SessionEnd"), env).returncode == 0
    wait_flushes(project, 3)
    assert run_hook(project, "session-end", payload(transcript, "SessionEnd"), env).returncode == 0
    outcomes = [e["outcome"] for e in wait_flushes(project, 4)]

    assert outcomes == ["distilled", "distilled", "distilled", "nothing-new"]
    calls = claude.calls()
    assert len(calls) == 3
    first, second, third = (call["stdin"] for call in calls)
    assert "httpOnly cookie" in first and "migrate first" not in first
    assert "migrate first" in second and "httpOnly cookie" not in second
    assert "db2" in third and "migrate first" not in third
    assert "continued from a previous conversation" not in third  # the compact summary restates old turns
    assert "def login()" not in first and "considering options" not in first  # tool results, thinking
    assert "sk-ant-api03-AAAA" not in first and "sk-ant-[REDACTED]" in first
    for call in calls:
        assert call["argv"][1:5] == ["-p", "--output-format", "json", "--max-turns"]
        assert not any("TRANSCRIPT" in arg or "cookie" in arg for arg in call["argv"])

    dailies = documents(project, "daily")
    assert len(dailies) == 3
    text = "\n".join(doc.text for doc in dailies)
    for atom in (DECISION, LESSON, LORE):
        assert f"### Atom · {atom['type']} · {atom['title']}" in text
    assert all(doc.name.startswith("daily-") and doc.metadata.scope == "app" for doc in dailies)


def test_session_start_gives_context_and_starts_compile_once_a_day(project: Path, claude: FakeCli) -> None:
    env = env_for(claude)
    first = run_hook(project, "session-start", {"session_id": SESSION, "source": "startup"}, env)
    context = json.loads(first.stdout)["hookSpecificOutput"]
    assert first.returncode == 0 and context["hookEventName"] == "SessionStart"
    assert "recall_lessons" in context["additionalContext"]
    assert "started in the background" in context["additionalContext"]
    wait_event(project, lambda e: e["event"] == "compile" and e.get("outcome") == "compiled")

    again = run_hook(project, "session-start", {"session_id": SESSION}, env)
    assert "already ran today" in json.loads(again.stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "payload is not JSON"),
        ("[1, 2]", "payload is a JSON list, not an object"),
        (json.dumps({"session_id": SESSION}), "payload has no transcript_path"),
        (json.dumps({"session_id": SESSION, "transcript_path": "/nonexistent/t.jsonl"}), "does not exist"),
        (
            json.dumps({"session_id": 7, "transcript_path": str(FIXTURES / "claude-session.jsonl")}),
            "session_id is not a string",
        ),
    ],
)
def test_bad_hook_input_is_logged_and_the_session_goes_on(
    project: Path, claude: FakeCli, text: str, reason: str
) -> None:
    result = run_hook(project, "session-end", text, env_for(claude))
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and reason in result.stderr
    assert wait_event(project, lambda e: e.get("action") == "skipped")["reason"].find(reason) >= 0
    assert claude.calls() == []
    assert not list((project / ".memory" / "capture" / "jobs").glob("*"))


@pytest.mark.parametrize(
    ("reply", "settings", "reason", "calls"),
    [
        ({"text": '{"atoms": "many"}'}, {"MEMCTL_CAPTURE_RETRIES": "1"}, "breaks the schema: atoms", 2),
        ({"text": "Sure! Here are the atoms."}, {"MEMCTL_CAPTURE_RETRIES": "0"}, "is not JSON", 1),
        (
            {"hang": True},
            {"MEMCTL_CAPTURE_TIMEOUT_SECONDS": "2", "MEMCTL_CAPTURE_RETRIES": "0"},
            "no answer within 2 s",
            1,
        ),
        ({"exit": 3, "stderr": "rate limited"}, {"MEMCTL_CAPTURE_RETRIES": "0"}, "exited with code 3", 1),
    ],
)
def test_a_failing_llm_writes_nothing_and_its_turns_are_tried_again(
    project: Path, claude: FakeCli, reply: dict[str, Any], settings: dict[str, str], reason: str, calls: int
) -> None:
    claude.script(*[reply] * calls, atoms_reply(DECISION))
    env = env_for(claude, **settings)
    transcript = project / "session.jsonl"
    transcript.write_text((FIXTURES / "claude-session.jsonl").read_text())

    assert run_hook(project, "pre-compact", payload(transcript, "PreCompact"), env).returncode == 0
    failed = wait_flushes(project, 1)[0]
    assert failed["outcome"] == "failed" and reason in failed["reason"]
    assert len(claude.calls()) == calls
    if calls == 2:
        assert "STRICT JSON" in claude.calls()[1]["stdin"]
    assert documents(project, "daily") == []

    assert run_hook(project, "session-end", payload(transcript, "SessionEnd"), env).returncode == 0
    assert wait_flushes(project, 2)[1]["outcome"] == "distilled"
    assert "httpOnly cookie" in claude.calls()[-1]["stdin"]  # the same turns, tried again
    assert len(documents(project, "daily")) == 1


def test_capture_is_skipped_without_a_provider(project: Path, claude: FakeCli) -> None:
    env = capture_env(claude.bin_dir)
    transcript = project / "session.jsonl"
    transcript.write_text((FIXTURES / "claude-session.jsonl").read_text())
    assert run_hook(project, "session-end", payload(transcript, "SessionEnd"), env).returncode == 0
    event = wait_flushes(project, 1)[0]
    assert event["outcome"] == "skipped" and "no capture provider configured" in event["reason"]
    assert claude.calls() == []
