"""`memctl audit`: findings as tables or JSON; --apply only acts on what was confirmed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import Dify, configure, memctl
from .stores import documents, seed_documents

pytestmark = pytest.mark.integration

LESSON = {"atom_type": "self-improvement-lesson", "project_module": "api", "task_type": "bugfix"}
AUDITED: list[tuple[str, str, str, dict[str, Any], bool]] = [
    ("plans", "plan-release.md", "old plan", {"atom_type": "plan"}, True),
    ("plans", "plan-release-v2.md", "newer plan", {"atom_type": "plan"}, True),
    ("knowledge", "bug-auth.md", "clock skew", {"atom_type": "bug-root-cause"}, True),
    ("knowledge", "bug-db.md", "pool size", {"atom_type": "bug-root-cause", "project_module": "db"}, True),
    ("self_improvement", "lesson-a.md", "retry", {**LESSON, "error_pattern": "timeout"}, True),
    ("self_improvement", "lesson-b.md", "retry more", {**LESSON, "error_pattern": "timeout"}, True),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    seed_documents(tmp_path, AUDITED)
    return tmp_path


def classes_of(report: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for f in report["findings"]:
        found.setdefault(f["class"], []).append(f["name"])
    return found


def test_audit_reports_each_class_and_changes_nothing(project: Path) -> None:
    before = documents(project)
    result = memctl("audit", "--project", str(project), "--json")
    assert result.code == 0
    assert classes_of(result.json) == {
        "stale-plans": ["plan-release.md"],
        "missing-metadata": ["bug-auth.md"],
        "duplicate-error-pattern": ["lesson-a.md"],
    }
    assert result.json["changed"] is False
    human = memctl("audit", "--project", str(project))
    assert human.code == 0 and "3 finding(s)" in human.stdout and "bug-auth.md" in human.stdout
    assert documents(project) == before


def test_apply_acts_per_class_and_per_item_as_confirmed(project: Path) -> None:
    # stale-plans: all; missing-metadata: each, declined; duplicate lessons: skipped
    result = memctl("audit", "--project", str(project), "--apply", input="a\ne\nn\ns\n")
    assert result.code == 0, result.stdout + result.stderr
    docs = documents(project)
    assert ("plans", "plan-release.md") not in docs
    assert docs[("knowledge", "bug-auth.md")][2] is True
    assert ("self_improvement", "lesson-a.md") in docs
    assert "applied 1 of 3" in result.stdout


def test_apply_without_answers_changes_nothing(project: Path) -> None:
    before = documents(project)
    result = memctl("audit", "--project", str(project), "--apply", input="")
    assert result.code == 0
    assert documents(project) == before


def test_apply_in_json_mode_needs_yes(project: Path) -> None:
    before = documents(project)
    refused = memctl("audit", "--project", str(project), "--apply", "--json")
    assert refused.code == 2 and "--yes" in refused.json["message"]
    assert documents(project) == before


def test_apply_yes_retires_every_finding_on_dify(tmp_path: Path, dify: Dify) -> None:
    project = configure(tmp_path / "p", knowledge_store=dify.url, dify_api_key_file=str(dify.key_file))
    seed_documents(project, AUDITED)
    result = memctl("audit", "--project", str(project), "--apply", "--yes", "--json")
    assert result.code == 0, result.stdout
    applied = {a["name"]: a["action"] for a in result.json["applied"]}
    lesson = "lesson-a.md" if "lesson-a.md" in applied else "lesson-b.md"  # Dify times to the second
    kept = "lesson-b.md" if lesson == "lesson-a.md" else "lesson-a.md"
    assert applied == {"plan-release.md": "delete", "bug-auth.md": "disable", lesson: "delete"}
    docs = documents(project)
    assert ("plans", "plan-release.md") not in docs and ("self_improvement", lesson) not in docs
    assert ("self_improvement", kept) in docs
    assert docs[("knowledge", "bug-auth.md")][2] is False
    again = memctl("audit", "--project", str(project), "--apply", "--yes", "--json")
    assert again.json["changed"] is False
