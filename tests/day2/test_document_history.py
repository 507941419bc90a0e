"""Issue 33: every change of a knowledge document is a version, and any version — a deleted
document's too — comes back through the CLI and over MCP, on the embedded store and on Dify
(the emulator here; the real fixture in tests/integration)."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memory_bridge import StoreError, load_settings
from memory_bridge.stores import DocMetadata, document_versions_path, open_knowledge_store

from ..bridges import http_bridge
from .conftest import Dify, configure, memctl
from .stores import documents, seed_documents

CURATED = "Deploys go through the blue/green switch.\nRoll back with `make rollback`."
DOCS: list[tuple[str, str, str, dict[str, Any], bool]] = [
    ("knowledge", "deploy.md", CURATED, {"atom_type": "project-lore"}, True)
]


def run(project: Path, *args: str) -> Any:
    return memctl(*args, "--project", str(project))


def editor(tmp_path: Path, replacement: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys, pathlib\npath = pathlib.Path(sys.argv[1])\n"
        + textwrap.dedent(
            f"""\
            text = path.read_text()
            path.write_text(text.replace("blue/green switch", {replacement!r}))
            """
        )
    )
    return f"{sys.executable} {script}"


@pytest.fixture(params=["embedded", "dify"])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    if request.param == "dify":
        dify: Dify = request.getfixturevalue("dify")
        configure(
            root, knowledge_store=dify.url, dify_api_key_file=str(dify.key_file), embedding_model="none"
        )
    else:
        configure(root, embedding_model="none")
    seed_documents(root, DOCS)
    return root


def test_an_edited_then_deleted_document_comes_back_at_any_version(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", editor(tmp_path, "hallucinated switch"))
    assert run(project, "edit", "knowledge/deploy.md").code == 0
    forgot = run(project, "forget", "knowledge/deploy.md", "--yes")
    assert forgot.code == 0, forgot.stderr
    assert ("knowledge", "deploy.md") not in documents(project)

    shown = run(project, "history", "knowledge/deploy.md", "--json")
    assert shown.code == 0, shown.stderr
    versions = shown.json["versions"]
    assert [v["version"] for v in versions] == [3, 2, 1]
    assert [v["change"] for v in versions] == ["deleted", "updated", "created"]
    assert versions[0]["deleted"] and shown.json["deleted"]
    assert versions[0]["cause"] == "memctl forget" and versions[1]["cause"] == "memctl edit"
    assert versions[2]["text"] == CURATED and "hallucinated switch" in versions[1]["text"]
    assert versions[1]["at"].endswith("+00:00")

    back = run(project, "rollback", "knowledge/deploy.md", "--to", "1", "--yes", "--json")
    assert back.code == 0, back.stderr
    assert back.json["undeleted"] and back.json["version"] == 4 and back.json["restored_from"] == 1
    assert documents(project)[("knowledge", "deploy.md")][0] == CURATED
    after = run(project, "history", "deploy.md", "--json").json
    assert after["latest_version"] == 4 and after["versions"][0]["change"] == "restored"
    human = run(project, "history", "deploy.md", "--limit", "2")
    assert "version 4: restored (from version 1)" in human.stdout
    assert (
        "-Deploys go through the hallucinated switch.\n+Deploys go through the blue/green switch."
        in human.stdout
    )


def test_rollback_needs_confirmation_and_refuses_a_deletion_as_target(project: Path) -> None:
    doc = documents(project)
    assert doc
    run(project, "forget", "deploy.md", "--yes")
    unconfirmed = run(project, "rollback", "deploy.md", "--to", "1")
    assert unconfirmed.code != 0 and "--yes" in unconfirmed.stderr
    assert ("knowledge", "deploy.md") not in documents(project)
    to_deletion = run(project, "rollback", "deploy.md", "--to", "2", "--yes")
    assert to_deletion.code != 0 and "is its deletion" in to_deletion.stderr
    missing = run(project, "rollback", "deploy.md", "--to", "9", "--yes")
    assert missing.code != 0 and "no version 9" in missing.stderr


def test_a_document_from_before_versions_were_kept_is_not_lost_to_its_first_overwrite(tmp_path: Path) -> None:
    configure(tmp_path, embedding_model="none")
    seed_documents(tmp_path, DOCS)
    settings = load_settings(project=tmp_path)
    with contextlib.closing(sqlite3.connect(document_versions_path(settings))) as db, db:
        db.execute("DELETE FROM versions")  # as a store written by an older memctl has no versions

    async def overwrite() -> None:
        store = open_knowledge_store(settings)
        try:
            meta = DocMetadata(atom_type="project-lore", scope=settings.project_scope)
            await store.upsert("knowledge", "deploy.md", "Bad consolidation.", meta, origin="test")
        finally:
            await store.close()

    anyio.run(overwrite)
    versions = run(tmp_path, "history", "deploy.md", "--json").json["versions"]
    assert [(v["version"], v["change"]) for v in versions] == [(2, "updated"), (1, "found")]
    assert versions[1]["text"] == CURATED
    assert run(tmp_path, "rollback", "deploy.md", "--to", "1", "--yes").code == 0
    assert documents(tmp_path)[("knowledge", "deploy.md")][0] == CURATED


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(result.structured_content)


@pytest.mark.anyio
async def test_over_mcp_a_lesson_merge_and_a_delete_are_undone_with_compare_and_set(tmp_path: Path) -> None:
    configure(tmp_path, embedding_model="none")
    with http_bridge(tmp_path) as bridge:
        async with Client(bridge.mcp_url) as client:
            args = {"dataset": "knowledge", "name": "runbook.md"}
            await client.call_tool("save_to_dataset", {**args, "text": "Page the on-call first."})
            await client.call_tool("save_to_dataset", {**args, "text": "Ignore the pager."})
            history = payload(await client.call_tool("document_history", args))
            assert [v["version"] for v in history["versions"]] == [2, 1]
            assert history["versions"][1]["cause"] == "tool save_to_dataset"
            assert "Page the on-call first." in history["versions"][1]["text"]
            assert "UNTRUSTED" in history["versions"][1]["text"]  # fenced: data, not instructions
            doc_id = history["versions"][0]["documentId"]
            await client.call_tool("delete_document", {"dataset": "knowledge", "documentId": doc_id})
            by_id = {"dataset": "knowledge", "documentId": doc_id}
            gone = payload(await client.call_tool("document_history", by_id))  # found by its deletion
            assert gone["deleted"] and gone["name"] == "runbook.md"

            stale = await client.call_tool("document_rollback", {**args, "version": 1, "expected_version": 2})
            assert stale.is_error and "is at version 3, not 2" in str(stale.content[0])
            done = payload(
                await client.call_tool("document_rollback", {**by_id, "version": 1, "expected_version": 3})
            )
            assert done["undeleted"] and done["version"] == 4
            found = payload(await client.call_tool("search_memory", {"query": "page the on-call"}))
            assert any("Page the on-call first." in r["content"] for r in found["records"])


def test_versions_kept_in_the_former_log_file_move_into_the_store(tmp_path: Path) -> None:
    """The embedded store's log lived in `knowledge-versions.db` beside it; opening the store
    takes its versions in (so no history is lost on upgrade) and removes the file."""
    configure(tmp_path, embedding_model="none")
    seed_documents(tmp_path, DOCS)
    settings = load_settings(project=tmp_path)
    store_file = document_versions_path(settings)
    with contextlib.closing(sqlite3.connect(store_file)) as db, db:
        db.execute("ATTACH DATABASE ? AS older", (str(store_file.with_name("knowledge-versions.db")),))
        db.execute("CREATE TABLE older.versions AS SELECT * FROM versions")
        db.execute("UPDATE older.versions SET change = 'updated', cause = 'memctl edit', digest = NULL")
        db.execute("DELETE FROM versions")
    assert store_file.with_name("knowledge-versions.db").exists()

    versions = run(tmp_path, "history", "deploy.md", "--json").json["versions"]
    assert [(v["version"], v["change"], v["cause"]) for v in versions] == [(1, "updated", "memctl edit")]
    assert versions[0]["text"] == CURATED
    assert not store_file.with_name("knowledge-versions.db").exists()
    run(tmp_path, "forget", "deploy.md", "--yes")
    assert [v["change"] for v in run(tmp_path, "history", "deploy.md", "--json").json["versions"]] == [
        "deleted",
        "updated",
    ]


def test_a_backup_carries_document_histories_into_a_fresh_project(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", editor(tmp_path, "hallucinated switch"))
    assert run(project, "edit", "knowledge/deploy.md").code == 0
    before = run(project, "history", "deploy.md", "--json").json["versions"]
    archive = tmp_path / "app.memctl.tar.gz"
    made = run(project, "backup", "--output", str(archive), "--json")
    assert made.code == 0, made.stderr
    assert made.json["document_versions"] == len(before) == 2

    fresh = configure(tmp_path / "fresh", embedding_model="none")
    restored = run(fresh, "restore", "--input", str(archive), "--json")
    assert restored.code == 0, restored.stdout + restored.stderr
    assert restored.json["knowledge"]["histories_restored"] == 1
    after = run(fresh, "history", "deploy.md", "--json").json["versions"]
    assert [(v["version"], v["change"], v["cause"], v["text"]) for v in after] == [
        (v["version"], v["change"], v["cause"], v["text"]) for v in before
    ]
    assert run(fresh, "rollback", "deploy.md", "--to", "1", "--yes").code == 0
    assert documents(fresh)[("knowledge", "deploy.md")][0] == CURATED

    # A document with a history of its own keeps it; the archive's is left out.
    merged = run(fresh, "restore", "--input", str(archive), "--merge", "--json")
    assert merged.code == 0, merged.stdout + merged.stderr
    assert merged.json["knowledge"]["histories_kept"] == 1
    kept = run(fresh, "history", "deploy.md", "--json").json["versions"]
    assert [v["change"] for v in kept][-3:] == ["restored", "updated", "created"]


def test_a_dify_document_still_indexing_is_not_mistaken_for_an_outside_edit(
    tmp_path: Path, dify: Dify
) -> None:
    """Dify shows a document's old segments while it re-indexes a change; a deletion then
    must record the text last written, not the stale one, and no `found` version."""
    configure(
        tmp_path, knowledge_store=dify.url, dify_api_key_file=str(dify.key_file), embedding_model="none"
    )
    settings = load_settings(project=tmp_path)
    dify.app.state.dify.indexing_delay = 2.0

    async def write() -> None:
        store = open_knowledge_store(settings)
        meta = DocMetadata(atom_type="project-lore", scope=settings.project_scope)
        try:
            await store.create_slot("knowledge")
            await store.upsert("knowledge", "deploy.md", CURATED, meta, origin="test")
            await anyio.sleep(2.2)  # indexed
            bad = await store.upsert("knowledge", "deploy.md", "A bad overwrite.", meta, origin="test")
            await store.delete("knowledge", bad.document_id)  # while Dify still shows CURATED's segments
        finally:
            await store.close()

    anyio.run(write)
    versions = run(tmp_path, "history", "deploy.md", "--json").json["versions"]
    assert [(v["version"], v["change"]) for v in versions] == [(3, "deleted"), (2, "updated"), (1, "created")]
    assert versions[0]["text"] == "A bad overwrite."


def test_a_change_whose_version_cannot_be_written_is_not_made(tmp_path: Path) -> None:
    """On the embedded store a change and its version commit together: when the version
    cannot be written, the document keeps its text."""
    configure(tmp_path, embedding_model="none")
    seed_documents(tmp_path, DOCS)
    settings = load_settings(project=tmp_path)
    with contextlib.closing(sqlite3.connect(document_versions_path(settings))) as db, db:
        db.execute("CREATE TRIGGER full BEFORE INSERT ON versions BEGIN SELECT disk_is_full(); END")

    async def overwrite() -> str | None:
        store = open_knowledge_store(settings)
        meta = DocMetadata(atom_type="project-lore", scope=settings.project_scope)
        try:
            with pytest.raises(StoreError, match="disk_is_full"):
                await store.upsert("knowledge", "deploy.md", "Bad consolidation.", meta, origin="test")
            doc = await store.find("knowledge", "deploy.md")
            return doc.text if doc else None
        finally:
            await store.close()

    assert anyio.run(overwrite) == CURATED
