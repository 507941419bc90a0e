"""`memctl maintain`'s passes that need no LLM, through the CLI, on the embedded store, the
Dify emulator and the real Dify: lesson-key merge, staleness flag, compression of archived
documents; --dry-run changes nothing; --undo writes back exactly what a run changed.

The runs happen "a year later" (the job's clock is moved), so what was saved now is old.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result

from memctl.cli import cli
from memory_bridge import load_settings
from memory_bridge.maintenance import maintain_dir
from memory_bridge.stores import DocMetadata, KnowledgeStore

from ..bridges import bridge_env
from .stores import KINDS, YEAR, Opener, knowledge_opener, with_store

SLOTS = ["knowledge", "self_improvement", "plans"]
PASSES = "dedupe-by-lesson-key,staleness-flag,compress-archived"
KEY = {"project_module": "db", "task_type": "debugging", "error_pattern": "missing-migration"}
LONG = "The old deploy checklist, step by step. " * 80  # 3,200 characters


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / ".memory").mkdir(parents=True)
    return root


@pytest.fixture(params=KINDS)
def opener(
    request: pytest.FixtureRequest, project: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Opener]:
    with knowledge_opener(request, monkeypatch, load_settings(project=project, slots=SLOTS), SLOTS) as open_:
        yield open_


def seed(opener: Opener, scope: str) -> dict[str, str]:
    """Two lessons with one key, a bug root cause, a decision, an archived long document,
    and the same archived document in `plans` (policy none: never touched). Name -> id."""

    async def work(store: KnowledgeStore) -> dict[str, str]:
        ids = {}

        async def save(slot: str, name: str, text: str, **meta: str) -> str:
            metadata = DocMetadata(scope=scope, tags=("ops",), **meta)
            outcome = await store.upsert(slot, name, text, metadata, origin="test")
            ids[name if slot != "plans" else f"plans/{name}"] = outcome.document_id
            return outcome.document_id

        lesson = {"atom_type": "self-improvement-lesson", **KEY}
        await save("self_improvement", "lesson-a.md", "Run migrations before the tests.", **lesson)
        await anyio.sleep(1.1)  # the keeper is the newer by creation time (Dify keeps seconds)
        await save("self_improvement", "lesson-b.md", "Run make migrate before the tests.", **lesson)
        await save(
            "knowledge", "root-cause.md", "The cache key lacked the tenant.", atom_type="bug-root-cause"
        )
        await save("knowledge", "decision.md", "We deploy blue/green.", atom_type="decision")
        for slot in ("knowledge", "plans"):
            doc = await save(slot, "checklist.md", LONG, atom_type="reference")
            assert await store.set_enabled(slot, doc, False)
        return ids

    result: dict[str, str] = with_store(opener, SLOTS, work)
    return result


def snapshot(opener: Opener) -> dict[tuple[str, str], tuple[Any, ...]]:
    """Every document as a person sees it: name, text, metadata, origin, enabled, marks."""

    async def work(store: KnowledgeStore) -> dict[tuple[str, str], tuple[Any, ...]]:
        docs = {}
        for slot in SLOTS:
            page, _ = await store.list_documents(slot, offset=0, limit=1000)
            for d in page:
                docs[slot, d.id] = (d.name, d.text, d.metadata, d.origin, d.enabled, d.marks)
        return docs

    result: dict[tuple[str, str], tuple[Any, ...]] = with_store(opener, SLOTS, work)
    return result


def maintain(project: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(
        cli, ["maintain", "--project", str(project), "--json", *args], env=bridge_env()
    )
    return result, json.loads(result.stdout)


def test_a_dry_run_reports_each_pass_and_changes_nothing(
    project: Path, opener: Opener, a_year_later: None
) -> None:
    ids = seed(opener, project.name)
    before = snapshot(opener)

    result, report = maintain(project, "--passes", PASSES, "--dry-run")

    assert result.exit_code == 0, result.output
    assert report["dry_run"] is True and report["ok"] is True
    steps = {s["name"]: s for s in report["steps"]}
    assert steps["dedupe-by-lesson-key"] == steps["dedupe-by-lesson-key"] | {
        "outcome": "dry-run",
        "detail": "would: 1 archived",
    }
    # each pass looks at the store as it is: the lesson the merge would archive is counted
    assert steps["staleness-flag"]["detail"] == "would: 3 flagged", "the lessons and the root cause"
    assert steps["compress-archived"]["detail"] == "would: 1 truncated", "plans is never maintained"
    [archived] = report["actions"]["dedupe-by-lesson-key"]
    assert (archived["documentId"], archived["keeper"]) == (ids["lesson-a.md"], ids["lesson-b.md"])
    assert snapshot(opener) == before
    assert not (maintain_dir(project) / "undo").exists()


def test_a_run_archives_flags_and_truncates_and_undo_restores_it_exactly(
    project: Path, opener: Opener, a_year_later: None
) -> None:
    """On a real Dify the undo's enable of a document the run just disabled can meet Dify's
    stale "being indexed" flag; saves that wait (as here) wait it out (up to ten minutes)."""
    ids = seed(opener, project.name)
    before = snapshot(opener)

    result, report = maintain(project, "--passes", PASSES)

    assert result.exit_code == 0, result.output
    assert report["ok"] is True
    after = snapshot(opener)
    loser = after["self_improvement", ids["lesson-a.md"]]
    assert loser[4] is False and loser[5]["superseded_by"] == ids["lesson-b.md"]
    assert loser[5]["consolidated_at"].startswith(time.strftime("%Y", time.gmtime(time.time() + YEAR)))
    assert after["self_improvement", ids["lesson-b.md"]][5] == {"stale": "true"}
    assert after["knowledge", ids["root-cause.md"]][5] == {"stale": "true"}
    assert after["knowledge", ids["decision.md"]] == before["knowledge", ids["decision.md"]]
    checklist = after["knowledge", ids["checklist.md"]]
    assert checklist[4] is False and "consolidate_truncated_at" in checklist[5]
    words = checklist[1].split()  # Dify reads a document back as its segments joined
    kept = LONG[:1200].split()[:-1]  # the cut may split the last word
    assert words[: len(kept)] == kept
    assert "[truncated by memctl maintain at " in checklist[1]
    assert len(checklist[1]) < 1400 and checklist[2] == before["knowledge", ids["checklist.md"]][2]
    plans = [v for (slot, _), v in after.items() if slot == "plans"]
    assert plans == [v for (slot, _), v in before.items() if slot == "plans"]
    undo_file = maintain_dir(project) / "undo" / f"{report['run_id']}.json"
    assert oct(undo_file.stat().st_mode & 0o777) == "0o600"

    again, second = maintain(project, "--passes", PASSES)
    assert again.exit_code == 0 and {s["detail"] for s in second["steps"]} == {"nothing to do"}

    undone, restored = maintain(project, "--undo", report["run_id"])
    assert undone.exit_code == 0, undone.output
    assert restored == restored | {"ok": True, "run_id": report["run_id"], "restored": 4}
    assert snapshot(opener) == before

    twice, refused = maintain(project, "--undo", report["run_id"])
    assert twice.exit_code == 3 and "undone already" in refused["message"]


def test_undo_refuses_a_malformed_run_id_and_options_it_does_not_take(project: Path) -> None:
    bad, refused = maintain(project, "--undo", "../../etc")
    assert bad.exit_code == 7 and "is not a run id" in refused["message"]
    result = CliRunner().invoke(
        cli, ["maintain", "--project", str(project), "--undo", "0123456789ab", "--dry-run"], env=bridge_env()
    )
    assert result.exit_code == 2 and "--undo takes none of --dry-run" in result.output


def test_identical_bodies_keep_the_newest_and_the_lesson_merge_sees_only_it(
    project: Path, opener: Opener
) -> None:
    scope = project.name
    lesson = DocMetadata(scope=scope, atom_type="self-improvement-lesson", **KEY)

    async def work(store: KnowledgeStore) -> list[str]:
        ids = []
        for name in ("copy-1.md", "copy-2.md"):
            ids.append(
                (
                    await store.upsert("self_improvement", name, "Migrate first.", lesson, origin="t")
                ).document_id
            )
            await anyio.sleep(1.1)
        return ids

    older, newer = with_store(opener, SLOTS, work)
    before = snapshot(opener)

    result, report = maintain(project, "--passes", "dedupe-by-sha256,dedupe-by-lesson-key")

    assert result.exit_code == 0, result.output
    steps = {s["name"]: s["detail"] for s in report["steps"]}
    assert steps == {"dedupe-by-sha256": "1 archived", "dedupe-by-lesson-key": "nothing to do"}
    [archived] = report["actions"]["dedupe-by-sha256"]
    assert (archived["documentId"], archived["keeper"]) == (older, newer)
    after = snapshot(opener)
    assert after["self_improvement", older][4] is False
    assert after["self_improvement", older][5]["superseded_by"] == newer
    assert after["self_improvement", newer] == before["self_improvement", newer]


def test_a_flagged_document_recalled_since_loses_the_flag(
    project: Path, opener: Opener, a_year_later: None
) -> None:
    meta = DocMetadata(scope=project.name, atom_type="bug-root-cause")

    async def save(store: KnowledgeStore) -> str:
        return (
            await store.upsert("knowledge", "cause.md", "The tenant was missing.", meta, origin="t")
        ).document_id

    doc = with_store(opener, SLOTS, save)
    result, report = maintain(project, "--passes", "staleness-flag")
    assert result.exit_code == 0 and report["steps"][0]["detail"] == "1 flagged"
    assert snapshot(opener)["knowledge", doc][5] == {"stale": "true"}

    async def recall(store: KnowledgeStore) -> int:
        return await store.stamp_recalls("knowledge", [doc], now=time.time() + YEAR, window=0)

    assert with_store(opener, SLOTS, recall) == 1
    result, report = maintain(project, "--passes", "staleness-flag")
    assert result.exit_code == 0 and report["steps"][0]["detail"] == "1 unflagged"
    assert snapshot(opener)["knowledge", doc][5] == {}
