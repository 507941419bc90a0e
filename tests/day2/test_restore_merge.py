"""Issue 13, finding 9: `restore --merge` keeps the target's history of an entry both hold.

The archive's version becomes a new revision on top of the target's; every earlier
version of the target stays in memory_history and can be rolled back to.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from memory_bridge import EntryStore, load_settings
from memory_bridge import core as ops
from memory_bridge.stores import open_entry_store

from .conftest import configure, memctl
from .stores import note

T = TypeVar("T")


def on_store(project: Path, work: Callable[[EntryStore], Awaitable[T]]) -> T:
    async def run() -> T:
        store = open_entry_store(load_settings(project=project))
        try:
            return await work(store)
        finally:
            await store.close()

    return anyio.run(run)


def write(project: Path, id: str, *bodies: str) -> None:
    async def run(store: EntryStore) -> None:
        for body in bodies:
            await ops.set_entry(
                store, note(id, body=body), ttl=None, if_version=None, operation_id=None, max_entries_warn=99
            )

    on_store(project, run)


def delete(project: Path, id: str) -> None:
    async def run(store: EntryStore) -> None:
        await ops.delete_entry(store, id)

    on_store(project, run)


def history(project: Path, id: str) -> list[dict[str, Any]]:
    async def run(store: EntryStore) -> list[dict[str, Any]]:
        return (await ops.entry_history(store, id, 100)).model_dump()["versions"]

    return on_store(project, run)


def current(project: Path, id: str) -> dict[str, Any] | None:
    async def run(store: EntryStore) -> dict[str, Any] | None:
        found = await store.get(id)
        return None if found is None else found[0].to_dict()

    return on_store(project, run)


def rollback(project: Path, id: str, index: int) -> None:
    async def run(store: EntryStore) -> None:
        await ops.rollback_entry(store, id, index)

    on_store(project, run)


@pytest.fixture(params=["sqlite", "valkey"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    project = tmp_path / "target"
    if request.param == "valkey":
        configure(project, entry_store=request.getfixturevalue("valkey_url"))
    return project


def test_merge_puts_the_archive_version_on_top_of_the_target_history(tmp_path: Path, target: Path) -> None:
    source = tmp_path / "source"
    write(source, "shared", "archive one", "archive two")
    write(source, "gone", "archive lived")
    delete(source, "gone")
    write(source, "only-archive", "new here")
    archive = tmp_path / "a.tar.gz"
    assert memctl("backup", "--project", str(source), "-o", str(archive)).code == 0
    write(target, "shared", "target one", "target two", "target three")
    write(target, "gone", "target still uses it")
    write(target, "only-target", "mine")

    merged = memctl("restore", "--project", str(target), "-i", str(archive), "--merge", "--json")

    assert merged.code == 0, merged.stdout + merged.stderr
    shared = current(target, "shared")
    assert shared is not None and shared["body"] == "archive two"
    bodies = [v["body"] for v in history(target, "shared")]
    assert bodies == ["archive two", "target three", "target two", "target one"]
    assert current(target, "gone") is None
    assert [v["operation"] for v in history(target, "gone")] == ["deleted", "created"]
    assert current(target, "only-target") is not None and current(target, "only-archive") is not None

    assert sorted(merged.json["entries"]["revised"]) == ["gone", "shared"]
    assert merged.json["entries"]["mismatched"] == []
    rollback(target, "shared", 1)  # the target's own last version is still there to go back to
    shared = current(target, "shared")
    assert shared is not None and shared["body"] == "target three"


def test_merging_an_archive_whose_version_the_target_already_has_adds_no_revision(
    tmp_path: Path, target: Path
) -> None:
    source = tmp_path / "source"
    write(source, "same", "identical body")
    archive = tmp_path / "a.tar.gz"
    assert memctl("backup", "--project", str(source), "-o", str(archive)).code == 0
    write(target, "same", "older body", "identical body")

    merged = memctl("restore", "--project", str(target), "-i", str(archive), "--merge", "--json")

    assert merged.code == 0, merged.stdout
    assert [v["body"] for v in history(target, "same")] == ["identical body", "older body"]
    assert merged.json["entries"]["revised"] == []
    assert json.loads(merged.stdout)["ok"] is True
