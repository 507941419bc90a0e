"""A project's knowledge stays findable when its directory is renamed, moved, cloned under
another name or restored elsewhere: its scope is pinned, not taken from the directory."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memory_bridge import pinned_scope

from ..bridges import bridge_env, stdio_params
from .conftest import Run


def memctl(*args: str) -> Run:
    """`memctl ARGS` in a subprocess (these tests run in an event loop of their own)."""
    done = subprocess.run(
        [sys.executable, "-m", "memctl", *args], env=bridge_env(), capture_output=True, text=True, timeout=300
    )
    return Run(done.returncode, done.stdout, done.stderr)


pytestmark = pytest.mark.anyio

DECISION = {
    "dataset": "knowledge",
    "name": "decision-queue.md",
    "text": "We chose RabbitMQ for the order queue because of its dead-letter exchanges.",
    "metadata": {"atom_type": "decision", "project_module": "orders"},
}
LESSON = {
    "title": "Purge the queue before replaying orders",
    "body": "Replaying without a purge sends every order twice.",
    "metadata": {"project_module": "orders", "task_type": "debugging", "error_pattern": "double-replay"},
}


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return dict(json.loads(result.content[0].text))


async def _save(project: Path, **env: str) -> None:
    async with Client(stdio_params(project, MEMCTL_EMBEDDING_MODEL="none", **env), mode="legacy") as client:
        _payload(await client.call_tool("save_to_dataset", DECISION))
        _payload(await client.call_tool("save_lesson", LESSON))


async def _finds_both(project: Path) -> bool:
    async with Client(stdio_params(project, MEMCTL_EMBEDDING_MODEL="none"), mode="legacy") as client:
        found = _payload(await client.call_tool("search_memory", {"query": "order queue dead-letter"}))
        lessons = _payload(
            await client.call_tool(
                "recall_lessons", {"query": "replaying orders", "project_module": "orders"}
            )
        )
    names = {record["documentName"] for record in found["records"]}
    return "decision-queue.md" in names and lessons["lessonHits"] == 1


async def test_rename_move_and_clone_keep_every_document_findable(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    await _save(app)
    assert pinned_scope(app) == "app"

    renamed = tmp_path / "app-renamed"
    app.rename(renamed)
    assert await _finds_both(renamed), "after a rename"

    moved = tmp_path / "elsewhere" / "checkout"
    moved.parent.mkdir()
    renamed.rename(moved)
    assert await _finds_both(moved), "after a move"

    clone = tmp_path / "clone-under-another-name"
    shutil.copytree(moved, clone)
    assert await _finds_both(clone), "in a copy under another name"


async def test_restore_into_another_directory_keeps_the_scope_and_scope_rehomes(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    await _save(app)
    archive = tmp_path / "app.tar.gz"
    assert memctl("backup", "--project", str(app), "-o", str(archive)).code == 0

    other = tmp_path / "restored-here"
    other.mkdir()
    restored = memctl("restore", "--project", str(other), "-i", str(archive), "--json")
    assert restored.code == 0, restored.stdout + restored.stderr
    assert restored.json["scope"] == "app" and pinned_scope(other) == "app"
    assert await _finds_both(other), "restored into another directory"

    team = tmp_path / "team"
    team.mkdir()
    async with Client(stdio_params(team, MEMCTL_EMBEDDING_MODEL="none"), mode="legacy") as client:
        await client.list_tools()  # serving it pins its own scope
    assert pinned_scope(team) == "team"
    plain = memctl("restore", "--project", str(team), "-i", str(archive), "--merge", "--json")
    assert plain.code == 0 and plain.json["warnings"] and "--scope team" in plain.json["warnings"][0]
    rehomed = memctl(
        "restore", "--project", str(team), "-i", str(archive), "--merge", "--scope", "team", "--json"
    )
    assert rehomed.code == 0, rehomed.stdout + rehomed.stderr
    assert rehomed.json["scope"] == "team" and not rehomed.json["warnings"]
    assert await _finds_both(team), "re-homed under the project's own scope"


async def test_migrate_adopts_a_store_made_before_scopes_were_pinned(tmp_path: Path) -> None:
    old = tmp_path / "app"
    old.mkdir()
    await _save(old, MEMCTL_SCOPE="app")  # a scope from the environment is used, not pinned
    assert pinned_scope(old) is None
    renamed = tmp_path / "app-v2"
    old.rename(renamed)
    dry = memctl("migrate", "--project", str(renamed), "--dry-run", "--json")
    assert dry.code == 0 and any(step["name"] == "project-scope" for step in dry.json["pending"]), dry.stdout
    run = memctl("migrate", "--project", str(renamed), "--json")
    assert run.code == 0, run.stdout + run.stderr
    assert pinned_scope(renamed) == "app", "the scope its documents carry, not the new directory's name"
    assert await _finds_both(renamed)
