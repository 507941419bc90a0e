"""`memctl compile`: atoms of daily documents merged into knowledge and lessons."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from memctl.capture._daily import render_daily
from memctl.capture._schema import Atom
from memory_bridge import load_settings
from memory_bridge.core import KnowledgeContext, save_to_dataset
from memory_bridge.core._knowledge import save_lesson
from memory_bridge.stores import make_embedder, open_knowledge_store

from .fakes import FakeCli, capture_env, install_fake
from .helpers import documents, memctl
from .test_hooks import DECISION, LESSON, LORE

GOTCHA = {
    "type": "pattern-gotcha",
    "title": "Close CSV writers in a with block",
    "body": "An unclosed csv writer drops its last buffered row.\nWhy: the buffer is never flushed.\n"
    "How to apply: open export files with a with block.",
    "tags": ["csv"],
    "metadata": {"project_module": "export", "language": "python", "task_type": "debugging"},
}
NO_PATTERN = {
    **LESSON,
    "title": "Ask before deleting",
    "metadata": {"project_module": "ops", "task_type": "deploy"},
}


async def _seed(project: Path, atoms: list[dict[str, Any]]) -> dict[str, str]:
    """Earlier knowledge (a lesson, a decision, a gotcha) and one daily holding `atoms`."""
    settings = load_settings(project=project)
    store = open_knowledge_store(settings, make_embedder(settings))
    ctx = KnowledgeContext(store, settings.project_scope)
    try:
        ids = {}
        lesson = await save_lesson(
            ctx,
            title="Seed only after migrating",
            body="Older wording: seeding first fails.",
            metadata={
                "project_module": "db",
                "task_type": "implementation",
                "error_pattern": "seed-before-migrate",
            },
            tags=["database"],
            evidence=None,
        )
        ids["lesson"] = lesson.name
        for key, atom in (("decision", DECISION), ("gotcha", GOTCHA)):
            saved = await save_to_dataset(
                ctx,
                dataset="knowledge",
                name=f"knowledge-earlier-{key}.md",
                text=f"# {atom['title']}\n\n{atom['body']}\n",
                metadata={"atom_type": atom["type"], "tags": atom["tags"]},
            )
            ids[key] = saved.documentId
        daily = render_daily(
            [Atom.model_validate(a) for a in atoms],
            event="session-end",
            session_id="s1",
            workspace="app",
            now=time.time(),
        )
        await save_to_dataset(
            ctx, dataset="daily", name=daily.name, text=daily.text, metadata={"tags": ["daily"]}
        )
        ids["daily"] = daily.name
        return ids
    finally:
        await store.close()


def _snapshot(project: Path) -> dict[str, tuple[str, bool]]:
    return {
        f"{slot}/{doc.name}": (doc.text, doc.enabled)
        for slot in ("knowledge", "self_improvement", "daily")
        for doc in documents(project, slot)
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / ".memory").mkdir(parents=True)
    return root


@pytest.fixture
def claude(tmp_path: Path) -> FakeCli:
    return install_fake(tmp_path / "bin", "claude")


def test_compile_routes_merges_and_reports_a_failing_atom(project: Path, claude: FakeCli) -> None:
    raw_lesson = {
        **LESSON,
        "title": "Migrate before you seed",
        "body": "Always run migrations, then the seed.",
    }
    ids = anyio.run(_seed, project, [raw_lesson, DECISION, LORE, NO_PATTERN, GOTCHA])
    env = capture_env(claude.bin_dir, MEMCTL_CAPTURE_PROVIDER="claude")
    before = _snapshot(project)

    dry = memctl(project, env, "compile", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    planned = [(a["title"], a["action"]) for a in json.loads(dry.stdout)["atoms"]]
    assert planned == [
        ("Migrate before you seed", "would-update"),
        (DECISION["title"], "would-ask"),
        (LORE["title"], "would-create"),
        (NO_PATTERN["title"], "dropped"),
        (GOTCHA["title"], "would-ask"),
    ]
    assert claude.calls() == [] and _snapshot(project) == before
    assert not (project / ".memory" / "capture" / "compile-state.json").exists()

    merged = {
        "action": "update",
        "supersedes": ids["decision"],
        "merged_text": "MERGED cookie rule",
        "reason": "same",
    }
    wrong = {
        "action": "update",
        "supersedes": "doc-that-was-never-a-candidate",
        "merged_text": "x",
        "reason": "?",
    }
    claude.script({"text": json.dumps(merged)}, {"text": json.dumps(wrong)})
    run = memctl(project, env, "compile")

    assert run.returncode == 1, run.stderr  # one atom failed, the rest landed
    report = json.loads(run.stdout)
    actions = {a["title"]: (a["action"], a["target"]) for a in report["atoms"]}
    assert actions["Migrate before you seed"] == ("update", f"self_improvement/{ids['lesson']}")
    assert actions[DECISION["title"]] == ("update", "knowledge/knowledge-earlier-decision.md")
    assert actions[LORE["title"]] == ("create", "knowledge/knowledge-staging-database-is-db2.md")
    assert actions[GOTCHA["title"]][0] == "error"
    assert "not a candidate" in next(a["reason"] for a in report["atoms"] if a["action"] == "error")
    assert report["compiled"] == []  # retried next run

    judge = claude.calls()
    assert len(judge) == 2  # the lesson needed no LLM; the lore had no near-duplicate
    assert "EXISTING CANDIDATES" in judge[0]["stdin"] and ids["decision"] in judge[0]["stdin"]
    [lesson] = documents(project, "self_improvement")
    assert lesson.name == ids["lesson"] and "Always run migrations, then the seed." in lesson.text
    knowledge = {doc.name: doc for doc in documents(project, "knowledge")}
    assert "MERGED cookie rule" in knowledge["knowledge-earlier-decision.md"].text
    assert knowledge["knowledge-staging-database-is-db2.md"].metadata.atom_type == "project-lore"
    assert knowledge["knowledge-earlier-gotcha.md"].text == before["knowledge/knowledge-earlier-gotcha.md"][0]
    state = json.loads((project / ".memory" / "capture" / "compile-state.json").read_text())
    assert state["attempts"] == {ids["daily"]: 1} and state["last_attempted_date"] == time.strftime(
        "%Y-%m-%d", time.gmtime()
    )


def test_compiled_dailies_are_disabled_after_the_retention_period(project: Path, claude: FakeCli) -> None:
    ids = anyio.run(_seed, project, [LORE])
    env = capture_env(claude.bin_dir, MEMCTL_CAPTURE_PROVIDER="claude")
    first = json.loads(memctl(project, env, "compile").stdout)
    assert first["compiled"] == [ids["daily"]] and first["retired"] == []
    again = json.loads(memctl(project, env, "compile").stdout)
    assert again["atoms"] == [] and again["retired"] == []  # compiled once, kept enabled for now

    with sqlite3.connect(project / ".memory" / "knowledge.db") as conn:
        conn.execute(
            "UPDATE documents SET created_at = created_at - 8 * 86400 WHERE name = ?", (ids["daily"],)
        )
    old = json.loads(memctl(project, env, "compile").stdout)
    assert old["retired"] == [ids["daily"]]
    [daily] = documents(project, "daily")
    assert daily.enabled is False
    assert claude.calls() == []
