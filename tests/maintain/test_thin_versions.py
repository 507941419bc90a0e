"""Issue 33: `maintain` thins old document versions by its documented policy — of versions
older than `document_versions_thin_after_days`, the last of each day and every deletion are
kept, and the newest version always — and does nothing by default."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import anyio
from click.testing import CliRunner

from memctl.cli import cli
from memory_bridge import load_settings
from memory_bridge.stores import DocMetadata, document_versions_path, open_knowledge_store

from ..capture.fakes import capture_env

DAY = 86_400


def make_history(project: Path) -> None:
    """Versions 1-5 of knowledge/deploy.md: created, updated, deleted, saved again, updated."""

    async def run() -> None:
        store = open_knowledge_store(load_settings(project=project, embedding_model="none"))
        meta = DocMetadata(atom_type="project-lore")
        try:
            await store.create_slot("knowledge")
            first = await store.upsert("knowledge", "deploy.md", "one", meta, origin="test")
            await store.upsert("knowledge", "deploy.md", "two", meta, origin="test")
            await store.delete("knowledge", first.document_id)
            await store.upsert("knowledge", "deploy.md", "four", meta, origin="test")
            await store.upsert("knowledge", "deploy.md", "five", meta, origin="test")
        finally:
            await store.close()

    anyio.run(run)
    noon_long_ago = (int(time.time()) // DAY - 40) * DAY + 12 * 3600
    path = document_versions_path(load_settings(project=project))
    with contextlib.closing(sqlite3.connect(path)) as db, db:  # versions 1-4: one day, 40 days ago
        db.execute("UPDATE versions SET at = ? + version * 60 WHERE version <= 4", (noon_long_ago,))


def versions(project: Path) -> list[tuple[int, str]]:
    result = CliRunner().invoke(cli, ["history", "deploy.md", "--project", str(project), "--json"])
    return [(v["version"], v["change"]) for v in json.loads(result.stdout)["versions"]]


def maintain(project: Path, *args: str, **env: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        cli,
        ["maintain", "--project", str(project), "--passes", "thin-versions", "--json", *args],
        env=capture_env(project, MEMCTL_EMBEDDING_MODEL="none", **env),
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_old_versions_are_thinned_to_the_last_of_each_day_keeping_deletions(tmp_path: Path) -> None:
    project = tmp_path / "app"
    (project / ".memory").mkdir(parents=True)
    make_history(project)
    everything = [(5, "updated"), (4, "created"), (3, "deleted"), (2, "updated"), (1, "created")]
    assert versions(project) == everything

    by_default = maintain(project)
    assert by_default["steps"][0]["outcome"] == "skipped" and versions(project) == everything

    dry = maintain(project, "--dry-run", MEMCTL_DOCUMENT_VERSIONS_THIN_AFTER_DAYS="30")
    assert [(c["ref"], c["change"]) for c in dry["changes"]] == [
        ("knowledge/deploy.md", "2 old version(s) thinned (the last of each day kept)")
    ]
    assert versions(project) == everything

    maintain(project, MEMCTL_DOCUMENT_VERSIONS_THIN_AFTER_DAYS="30")
    assert versions(project) == [(5, "updated"), (4, "created"), (3, "deleted")]
    again = maintain(project, MEMCTL_DOCUMENT_VERSIONS_THIN_AFTER_DAYS="30")
    assert again["changes"] == [] and versions(project)[0] == (5, "updated")
