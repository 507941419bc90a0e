"""Plan capture: an approved plan lands in the plans slot as `plan-<slug>.md`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memctl.capture._plan import plan_name

from .fakes import capture_env
from .helpers import documents, run_hook, wait_event


def plan_payload(plan: Any, **response: Any) -> dict[str, Any]:
    return {
        "session_id": "s1",
        "hook_event_name": "PostToolUse",
        "tool_name": "ExitPlanMode",
        "tool_input": {"plan": plan},
        "tool_response": {"plan": plan, **response},
    }


def test_an_approved_plan_is_upserted_by_its_title(tmp_path: Path) -> None:
    project = tmp_path / "app"
    (project / ".memory").mkdir(parents=True)
    env = capture_env(tmp_path / "bin")  # plan capture needs no LLM
    secret = "ghp_abcdefghijklmnopqrstuvwxyz0123"
    plan = f"# Move sessions to Valkey\n\n1. Add the client.\n2. CI pushes with {secret}\n"

    assert run_hook(project, "exit-plan-mode", plan_payload(plan), env).returncode == 0
    wait_event(project, lambda e: e["event"] == "plan" and e.get("outcome") == "captured")
    revised = plan.replace("Add the client.", "Add the client and a health check.")
    assert run_hook(project, "exit-plan-mode", plan_payload(revised, approved=True), env).returncode == 0
    wait_event(project, lambda e: _count(project) == 2)
    rejected = run_hook(project, "exit-plan-mode", plan_payload("# Other plan", approved=False), env)
    assert "skipped (plan not approved)" in rejected.stderr

    [doc] = documents(project, "plans")
    assert doc.name == "plan-move-sessions-to-valkey.md"
    assert "health check" in doc.text and "ghp_[REDACTED]" in doc.text and "abcdefghij" not in doc.text
    assert (doc.metadata.atom_type, doc.metadata.task_type, doc.metadata.scope) == ("plan", "planning", "app")


def _count(project: Path) -> int:
    from memctl.capture._log import read_events
    from memctl.capture._paths import CaptureDirs

    return sum(e["event"] == "plan" for e in read_events(CaptureDirs(project).log, 100))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Миграция базы данных", "Миграция базы знаний"),
        ("データベース移行計画", "データベース移行計画書"),
        (
            "数据库迁移计划第一阶段准备工作与风险评估以及回滚方案",
            "数据库迁移计划第一阶段准备工作与风险评估以及回滚方案二",
        ),
        ("🚀🚀", "🔥🔥"),
    ],
)
def test_titles_in_any_script_get_distinct_stable_names(first: str, second: str) -> None:
    assert plan_name(first) == plan_name(first)
    assert plan_name(first) != plan_name(second)
    assert len(plan_name(first)) <= len("plan-.md") + 60
    assert plan_name(first).startswith("plan-") and "untitled.md" not in plan_name(first)
