"""Tables at 80 and 120 columns name items by short refs, and every time is ISO 8601 in UTC (issue 33)."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import anyio
import pytest

from memory_bridge import load_settings, open_entry_store

from .conftest import Dify, configure, memctl
from .stores import note, seed_documents, seed_entries, stamp_recall
from .test_memory_cli import DOCS
from .test_outbox import dead_letter

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    seed_entries(tmp_path, 5)
    seed_documents(tmp_path, DOCS)
    stamp_recall(tmp_path, "self_improvement", "lesson-timeout.md", 1_790_000_000.0)
    return tmp_path


def shown(project: Path, *args: str) -> str:
    run = memctl(*args, "--project", str(project))
    assert run.code == 0, run.stderr
    return run.stdout


def fits(text: str, width: int) -> None:
    too_wide = [line for line in text.splitlines() if len(line) > width]
    assert not too_wide, f"lines wider than {width}: {too_wide}"
    assert not UUID.search(text), "a table names an item by its UUID"


@pytest.mark.parametrize("width", [80, 120])
def test_tables_fit_the_width_and_name_documents_by_slot_and_name(
    project: Path, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    search = shown(project, "search", "deploy")
    fits(search, width)
    assert "knowledge/deploy.md" in search
    lessons = shown(project, "lessons")
    fits(lessons, width)
    assert "self_improvement/lesso" in lessons and "2026-09-21T14:13:20+00:00" in lessons
    document = shown(project, "show", "deploy.md")
    assert document.splitlines()[0] == "knowledge/deploy.md"
    assert all(len(line) <= width for line in document.splitlines())
    assert re.search(r"updated_at +│ \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", document)
    entry = shown(project, "show", "n-000", "--history", "1")
    assert entry.splitlines()[0] == "entry:n-000"
    assert all(len(line) <= width for line in entry.splitlines())


def test_a_table_too_wide_for_the_terminal_leaves_out_its_least_needed_columns(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    narrow = shown(project, "lessons")
    assert "not shown at 80 columns: module, updated (see --json)" in narrow
    monkeypatch.setenv("COLUMNS", "120")
    wide = shown(project, "lessons")
    assert "module" in wide and "updated" in wide and "not shown" not in wide


def test_json_keeps_full_ids_beside_the_short_ref_and_gives_times_in_iso_8601(project: Path) -> None:
    hit = next(h for h in memctl("search", "deploy", "--project", str(project), "--json").json["hits"])
    assert hit["ref"].startswith("doc:") and UUID.search(hit["ref"])
    assert hit["short_ref"] == "knowledge/deploy.md"
    lessons = memctl("lessons", "--project", str(project), "--json").json["lessons"]
    assert {lesson["short_ref"] for lesson in lessons} == {
        "self_improvement/lesson-timeout.md",
        "self_improvement/lesson-oom.md",
    }
    recalled = next(lesson for lesson in lessons if lesson["last_recalled"])
    assert recalled["last_recalled"] == "2026-09-21T14:13:20+00:00"
    assert all(ISO.match(lesson["updated_at"]) for lesson in lessons)
    document = memctl("show", "deploy.md", "--project", str(project), "--json").json
    assert ISO.match(document["created_at"]) and ISO.match(document["updated_at"])
    entry = memctl("show", "n-000", "--project", str(project), "--json").json
    assert entry["short_ref"] == "entry:n-000" and entry["ref"] == "entry:n-000"
    assert ISO.match(entry["created"]) and ISO.match(entry["updated"])
    assert all(ISO.match(version["updated"]) for version in entry["history"])
    assert datetime.fromisoformat(entry["updated"]).utcoffset() is not None


@pytest.mark.integration
def test_outbox_and_status_give_times_in_iso_8601_and_fit_80_columns(
    tmp_path: Path, dify: Dify, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = configure(
        tmp_path / "p", knowledge_store=dify.url, dify_api_key_file=str(dify.key_file), embedding_model="none"
    )
    dead_letter(project)
    [entry] = memctl("outbox", "list", "--project", str(project), "--json").json["entries"]
    assert ISO.match(entry["created_at"]), entry["created_at"]  # epoch seconds before
    status = memctl("status", "--project", str(project), "--json").json
    assert status["outbox"]["oldest"] is None  # only a dead write is queued
    for width in (80, 120):
        monkeypatch.setenv("COLUMNS", str(width))
        listed = memctl("outbox", "list", "--project", str(project))
        assert listed.code == 0 and "knowledge/x.md" in listed.stdout
        assert all(len(line) <= width for line in listed.stdout.splitlines()), listed.stdout
        report = memctl("status", "--project", str(project))
        assert all(len(line) <= width for line in report.stdout.splitlines()), report.stdout
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", listed.stdout)  # 120: queued at shown


def test_an_entry_id_a_table_cut_short_is_taken_back_by_show(tmp_path: Path) -> None:
    configure(tmp_path, embedding_model="none")

    async def seed() -> None:
        store = open_entry_store(load_settings(project=tmp_path))
        try:
            for id in (
                "quarterly-freeze-window-2026-q4",
                "quarterly-freeze-window-2027-q1",
                "0123456789abcdef-rotation",
            ):
                await store.set(
                    note(id, body=f"Release freeze {id}."), ttl=None, if_version=None, operation_id=None
                )
        finally:
            await store.close()

    anyio.run(seed)
    table = shown(tmp_path, "search", "rotation")
    assert "entry:0123456789ab…" in table
    entry = memctl("show", "entry:0123456789ab…", "--project", str(tmp_path), "--json")
    assert entry.code == 0, entry.stderr
    assert entry.json["id"] == "0123456789abcdef-rotation"
    both = memctl("show", "entry:quarterly-fr…", "--project", str(tmp_path))
    assert both.code == 7
    assert "entry:quarterly-freeze-window-2026-q4" in both.stderr
    assert "entry:quarterly-freeze-window-2027-q1" in both.stderr
