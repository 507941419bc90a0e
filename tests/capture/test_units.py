"""Transcript reading, the daily format and answer parsing, on their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memctl._errors import AnswerInvalid
from memctl.capture._daily import parse_atoms, render_daily
from memctl.capture._schema import Atom, CompileDecision, ExtractorAnswer, parse_answer
from memctl.capture._transcript import read_turns
from memctl.cli import cli

from .helpers import FIXTURES
from .test_hooks import DECISION, LESSON


def test_only_whole_lines_are_read_and_the_offset_resumes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    whole = (FIXTURES / "claude-session-2.jsonl").read_text()
    path.write_text(whole + '{"type":"user","message":{"role":"user","content":"half wr')
    first = read_turns(path)
    assert [t.role for t in first.turns] == ["User", "Assistant"] and first.end == len(whole.encode())
    with path.open("a") as handle:
        handle.write('itten"}}\nnot json\n')
    second = read_turns(path, first.end)
    assert [t.text for t in second.turns] == ["half written"] and second.unparseable == 1


def test_daily_atoms_survive_a_round_trip_and_dify_mangling() -> None:
    atoms = [Atom.model_validate(DECISION), Atom.model_validate({**LESSON, "evidence": "you seeded first"})]
    daily = render_daily(atoms, event="session-end", session_id="abc/def:123", workspace="app", now=0.5)
    assert daily.name == "daily-1970-01-01-000000500-abc_def_.md"
    parsed, broken = parse_atoms(daily.text)
    assert (parsed, broken) == (atoms, 0)
    mangled = daily.text.replace("### Atom", "Atom").replace("\n    ", "\n ")
    assert parse_atoms(mangled) == (atoms, 0)


def test_answers_are_found_in_fences_and_prose_and_checked() -> None:
    text = 'Here you go:\n```json\n{"atoms": []}\n```'
    assert parse_answer(text, ExtractorAnswer).atoms == []
    decision = parse_answer('{"action": "skip", "reason": "same"}', CompileDecision, wrap="decision")
    assert decision.decision.action == "skip"
    with pytest.raises(AnswerInvalid, match="supersedes"):
        parse_answer('{"action": "update", "merged_text": "x"}', CompileDecision, wrap="decision")
    with pytest.raises(AnswerInvalid, match="not JSON"):
        parse_answer("I cannot help with that.", ExtractorAnswer)


def test_atom_problems_name_what_is_missing() -> None:
    lesson = Atom.model_validate({**LESSON, "metadata": {"project_module": "db"}})
    assert lesson.problem() == "a lesson needs task_type, error_pattern"
    assert (
        Atom.model_validate({**DECISION, "type": "plan"}).problem()
        == "plan atoms come only from plan capture"
    )
    assert (
        Atom.model_validate({**DECISION, "metadata": {"task_type": "Napping"}}).metadata.task_type
        == "unknown"
    )


def test_hook_command_in_process_exits_zero_for_an_unknown_event() -> None:
    result = CliRunner().invoke(cli, ["hook", "teleport", "--json"], input="{}", catch_exceptions=False)
    assert result.exit_code == 0
    assert json.loads(result.stdout)["reason"].startswith("unknown event 'teleport'")


@pytest.mark.parametrize(
    "args", [["hook", "--help"], ["flush", "--help"], ["compile", "--help"], ["capture", "status", "--help"]]
)
def test_capture_commands_have_help(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0 and "Example:" in result.output


def test_status_says_when_capture_is_skipped(tmp_path: Path) -> None:
    (tmp_path / ".memory").mkdir()
    result = CliRunner().invoke(cli, ["status", "--project", str(tmp_path)], catch_exceptions=False)
    capture_row = next(line for line in result.output.splitlines() if "│ capture " in line)
    assert "skipped" in capture_row and "no capture provider configured" in capture_row
    args = ["status", "--project", str(tmp_path), "--json"]
    as_json = CliRunner().invoke(cli, args, catch_exceptions=False)
    report = json.loads(as_json.stdout)
    assert report["capture"]["skipped"] is True and report["capture"]["provider"] == "none"
    status = CliRunner().invoke(cli, ["capture", "status", "--project", str(tmp_path), "--json"])
    report = json.loads(status.stdout)
    assert report["enabled"] is False and "no capture provider configured" in report["note"]
