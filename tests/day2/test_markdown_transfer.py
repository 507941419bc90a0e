"""Issue 33, import/export done right: `import --dry-run` writes nothing, a new file creates
an item, a file taken out of the folder deletes its item only with `--prune`, and `export`
removes its own files of items deleted since (and nothing else, never through a link)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import anyio
import pytest

from memctl.transfer._markdown import parse_item, read_text
from memory_bridge import EntryWrite, load_settings, open_entry_store
from memory_bridge.stores import DocMetadata, open_knowledge_store

from .conftest import Dify, configure, memctl
from .test_markdown import edit, files, snapshot

MANIFEST = ".memctl-export.json"


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # table cells unfolded, for the text assertions


def seed(project: Path) -> None:
    """Three entries and two documents of the knowledge slot, plus an empty `ops` slot."""

    async def run() -> None:
        settings = load_settings(project=project)
        entries, knowledge = open_entry_store(settings), open_knowledge_store(settings)
        try:
            for n in (1, 2, 3):
                write = EntryWrite(f"n-{n}", f"Note {n}", f"body {n}", "decision", ("ops",), "test")
                await entries.set(write, ttl=None, if_version=None, operation_id=None)
            await knowledge.create_slot("knowledge")
            await knowledge.create_slot("ops")
            for name in ("deploy.md", "rollback.md"):
                metadata = DocMetadata(atom_type="reference", scope=settings.project_scope)
                await knowledge.upsert("knowledge", name, f"how to {name}", metadata, origin="test")
        finally:
            await entries.close()
            await knowledge.close()

    anyio.run(run)


def tree_bytes(directory: Path) -> dict[str, bytes | str]:
    """Every file below `directory` by its path: its bytes (a link: where it points)."""
    found: dict[str, bytes | str] = {}
    for path in sorted(directory.rglob("*")):
        where = path.relative_to(directory).as_posix()
        if path.is_symlink():
            found[where] = os.readlink(path)
        elif path.is_file():
            found[where] = path.read_bytes()
    return found


def run(*args: str, project: Path) -> tuple[int, dict[str, object]]:
    result = memctl(*args, "--project", str(project), "--json")
    return result.code, result.json


def exported(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "p"
    seed(project)
    out = tmp_path / "out"
    assert memctl("export", "--markdown", str(out), "--project", str(project)).code == 0
    return project, out


def by_status(report: dict[str, object]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for item in report["items"]:  # type: ignore[attr-defined]
        found.setdefault(item["status"], set()).add(item["file"])
    return found


def forget(project: Path, ref: str) -> None:
    assert memctl("forget", ref, "--yes", "--project", str(project)).code == 0


# -- 1. --dry-run ------------------------------------------------------------------------------


def test_a_dry_run_reports_every_change_and_writes_nothing(tmp_path: Path) -> None:
    project, out = exported(tmp_path)
    edit(out / "entries/decision/n-1.md", "title", "Fixed by a person")
    (out / "documents/knowledge/new-note.md").write_text("A note a person wrote.\n")
    (out / "entries/decision/n-3.md").unlink()
    store_before, folder_before = tree_bytes(project / ".memory"), tree_bytes(out)
    items_before = snapshot(project)

    code, report = run("import", "--markdown", str(out), "--prune", "--dry-run", project=project)
    assert code == 0, report
    assert report["dry_run"] is True
    assert by_status(report) == {
        "updated": {"entries/decision/n-1.md"},
        "created": {"documents/knowledge/new-note.md"},
        "deleted": {"entries/decision/n-3.md"},
        "unchanged": {
            "entries/decision/n-2.md",
            "documents/knowledge/deploy.md",
            "documents/knowledge/rollback.md",
        },
    }
    assert tree_bytes(project / ".memory") == store_before  # the stores, byte for byte
    assert tree_bytes(out) == folder_before
    assert snapshot(project) == items_before

    text = memctl("import", "--markdown", str(out), "--project", str(project), "--dry-run")
    assert text.code == 0
    assert "nothing written" in text.stdout and "would create" in text.stdout
    assert "would update" in text.stdout and "would delete" not in text.stdout  # no --prune
    assert "removed" in text.stdout
    assert tree_bytes(project / ".memory") == store_before

    # the real run does what the dry run said
    code, applied = run("import", "--markdown", str(out), "--prune", project=project)
    assert code == 0 and by_status(applied) == by_status(report) and applied["dry_run"] is False
    after = snapshot(project)
    assert after["entry:n-1"][1]["title"] == "Fixed by a person" and "entry:n-3" not in after


def test_a_dry_run_predicts_conflicts_and_invalid_files_with_the_same_exit_code(tmp_path: Path) -> None:
    project, out = exported(tmp_path)
    edit(out / "entries/decision/n-1.md", "source", "person")
    edit(out / "entries/decision/n-2.md", "type", "1-not-a-type")

    async def agent_writes() -> None:
        store = open_entry_store(load_settings(project=project))
        try:
            write = EntryWrite("n-1", "Agent's", "agent body", "decision", (), "agent")
            await store.set(write, ttl=None, if_version=None, operation_id=None)
        finally:
            await store.close()

    anyio.run(agent_writes)
    store_before = tree_bytes(project / ".memory")
    code, report = run("import", "--markdown", str(out), "--dry-run", project=project)
    assert code == 4 and report["error"] == "Conflict" and "dry run" in str(report["message"])
    statuses = {r["file"]: r for r in report["items"]}  # type: ignore[attr-defined]
    assert statuses["entries/decision/n-1.md"]["status"] == "conflict"
    assert "source" in statuses["entries/decision/n-1.md"]["differs"]
    assert statuses["entries/decision/n-2.md"]["status"] == "invalid"
    assert "type" in statuses["entries/decision/n-2.md"]["detail"]
    assert tree_bytes(project / ".memory") == store_before
    assert run("import", "--markdown", str(out), project=project)[0] == 4  # the real run agrees


# -- 2. a new file creates an item -------------------------------------------------------------


def test_new_files_create_items_and_a_second_import_finds_them_unchanged(tmp_path: Path) -> None:
    project, out = exported(tmp_path)
    (out / "documents/knowledge/new-note.md").write_text("A note a person wrote.\n")
    (out / "documents/ops").mkdir()
    (out / "documents/ops/on-call.md").write_text(
        "---\nname: On call rota\natom_type: reference\ntags: [people]\nenabled: false\n---\nAsk Ann.\n"
    )
    (out / "entries/decision/release-day.md").write_text(
        "---\ntitle: We release on Tuesdays\ntags:\n- release\n---\nNever on Fridays.\n"
    )
    (out / "entries/pattern").mkdir()
    (out / "entries/pattern/x.md").write_text("---\nid: retry/backoff\ntitle: Back off\n---\nDouble it.\n")

    code, report = run("import", "--markdown", str(out), project=project)
    assert code == 0, report
    created = {r["file"]: r["ref"] for r in report["items"] if r["status"] == "created"}  # type: ignore[attr-defined]
    assert set(created) == {
        "documents/knowledge/new-note.md",
        "documents/ops/on-call.md",
        "entries/decision/release-day.md",
        "entries/pattern/x.md",
    }
    assert report["created"] == 4 and report["conflict"] == 0
    items = snapshot(project)
    note = items[created["documents/knowledge/new-note.md"]]
    assert note[0]["name"] == "new-note.md" and note[0]["slot"] == "knowledge"
    assert note[1]["text"] == "A note a person wrote." and note[1]["enabled"] is True
    assert note[1]["scope"] == load_settings(project=project).project_scope
    rota = items[created["documents/ops/on-call.md"]]
    assert (rota[0]["name"], rota[0]["slot"]) == ("On call rota", "ops")
    assert rota[1]["tags"] == ["people"] and rota[1]["enabled"] is False and rota[1]["text"] == "Ask Ann."
    release = items["entry:release-day"][1]
    assert release == {
        "title": "We release on Tuesdays",
        "type": "decision",
        "tags": ["release"],
        "source": "memctl import",
        "project": "",
        "text": "Never on Fridays.",
    }
    assert items["entry:retry/backoff"][1]["type"] == "pattern"

    # each file now carries its item's identity and digest: a second import changes nothing
    parsed = parse_item(read_text(out / "entries/decision/release-day.md"), "f")
    assert parsed.ref == "entry:release-day" and not parsed.edited
    again = run("import", "--markdown", str(out), project=project)[1]
    assert again["unchanged"] == 9 and again["created"] == 0
    assert snapshot(project) == items


def test_a_new_file_that_cannot_be_imported_names_the_file_and_the_problem(tmp_path: Path) -> None:
    project, out = exported(tmp_path)
    bad = {
        "entries/decision/no-title.md": ("---\ntags: []\n---\ntext\n", "without a title"),
        "documents/no-such-slot/x.md": ("text\n", "not a knowledge slot"),
        "notes.md": ("just notes\n", "no known kind"),
        "entries/decision/bad-type.md": ("---\ntitle: T\ntype: 9x\n---\n", "type"),
        "entries/decision/copy.md": (None, "remove its revision and digest"),
    }
    copy = read_text(out / "entries/decision/n-1.md").replace("id: n-1", "id: n-copy")
    for where, (text, _) in bad.items():
        (out / where).parent.mkdir(parents=True, exist_ok=True)
        (out / where).write_text(copy if text is None else text)
    (out / "entries/decision/dup.md").write_text("---\nid: n-2\ntitle: Again\n---\n")
    before = snapshot(project)

    code, report = run("import", "--markdown", str(out), project=project)
    assert code == 4, report  # the new file for n-2, an entry already there, is a conflict
    reports = {r["file"]: r for r in report["items"]}  # type: ignore[attr-defined]
    for where, (_, problem) in bad.items():
        assert reports[where]["status"] == "invalid" and problem in reports[where]["detail"], reports[where]
    assert reports["entries/decision/dup.md"]["status"] == "conflict"
    assert "already exists" in reports["entries/decision/dup.md"]["detail"]
    assert snapshot(project) == before
    text = memctl("import", "--markdown", str(out), "--project", str(project))
    assert "no-title.md" in text.stdout and "without a title" in text.stdout


# -- 3. a file taken out of the folder -------------------------------------------------------


def test_a_removed_file_is_reported_and_deletes_its_item_only_with_prune(tmp_path: Path) -> None:
    project, out = exported(tmp_path)
    (out / "entries/decision/n-3.md").unlink()
    (out / "documents/knowledge/rollback.md").unlink()
    moved = out / "entries/decision/n-2.md"
    moved.rename(out / "n-2-kept-here.md")  # moved, not removed: its item stays

    code, report = run("import", "--markdown", str(out), project=project)
    assert code == 0 and report["removed"] == 2 and report["deleted"] == 0
    removed = {r["ref"] for r in report["items"] if r["status"] == "removed"}  # type: ignore[attr-defined]
    doc_ref = next(r for r in removed if r.startswith("doc:"))
    assert removed == {"entry:n-3", doc_ref}
    assert {"entry:n-3", doc_ref} <= set(snapshot(project))  # nothing deleted without --prune

    code, report = run("import", "--markdown", str(out), "--prune", project=project)
    assert code == 0 and report["deleted"] == 2
    now = snapshot(project)
    assert "entry:n-3" not in now and doc_ref not in now and "entry:n-2" in now
    # deleted as `memctl forget` deletes: the entry's history ends in a tombstone
    assert newest_version(project, "n-3")["operation"] == "deleted"
    again = run("import", "--markdown", str(out), "--prune", project=project)[1]
    assert again["removed"] == again["deleted"] == 0


def newest_version(project: Path, id: str) -> dict[str, object]:
    async def read() -> dict[str, object]:
        store = open_entry_store(load_settings(project=project))
        try:
            return (await store.history(id, 1))[0]
        finally:
            await store.close()

    return anyio.run(read)


def test_prune_does_not_delete_an_item_changed_in_the_store_since_the_export(tmp_path: Path) -> None:
    project, out = exported(tmp_path)
    (out / "entries/decision/n-3.md").unlink()

    async def agent_writes() -> None:
        store = open_entry_store(load_settings(project=project))
        try:
            write = EntryWrite("n-3", "Agent's newer", "kept", "decision", (), "agent")
            await store.set(write, ttl=None, if_version=None, operation_id=None)
        finally:
            await store.close()

    anyio.run(agent_writes)
    code, report = run("import", "--markdown", str(out), "--prune", project=project)
    [row] = [r for r in report["items"] if r["ref"] == "entry:n-3"]  # type: ignore[attr-defined]
    assert code == 4 and row["status"] == "conflict" and "not deleted" in row["detail"]
    assert snapshot(project)["entry:n-3"][1]["title"] == "Agent's newer"


# -- 4. export removes its own files of deleted items ----------------------------------------


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_export_removes_its_files_of_deleted_items_and_nothing_else(tmp_path: Path) -> None:
    project, out = exported(tmp_path)
    manifest = out / MANIFEST
    assert stat.S_IMODE(manifest.stat().st_mode) == 0o600
    edit(out / "entries/decision/n-3.md", "type", "reference")
    assert run("import", "--markdown", str(out), project=project)[0] == 0  # n-3 moves to entries/reference/
    mine = out / "entries/decision/mine.md"
    mine.write_text("a person's own notes\n")  # never written by memctl
    edited = out / "entries/decision/n-2.md"
    edited.write_text(read_text(edited).replace("body 2", "body 2, annotated"))
    for ref in ("entry:n-1", "entry:n-2", "knowledge/rollback.md"):
        forget(project, ref)

    code, report = run("export", "--markdown", str(out), project=project)
    assert code == 0, report
    removed = {r["file"] for r in report["removed"]}  # type: ignore[attr-defined]
    assert removed == {
        "entries/decision/n-1.md",
        "documents/knowledge/rollback.md",
        "entries/decision/n-3.md",
    }
    assert [k["file"] for k in report["kept"]] == ["entries/decision/n-2.md"]  # type: ignore[index]
    assert set(files(out)) == {
        "entries/decision/mine.md",
        "entries/decision/n-2.md",
        "entries/reference/n-3.md",
        "documents/knowledge/deploy.md",
    }
    assert mine.read_text() == "a person's own notes\n" and "annotated" in edited.read_text()

    # the edited file of a deleted entry is still known: importing it is a conflict, not a new entry
    code, report = run("import", "--markdown", str(out), project=project)
    rows = {r["file"]: r for r in report["items"]}  # type: ignore[attr-defined]
    assert rows["entries/decision/n-2.md"]["status"] == "conflict"
    assert "entry:n-2" not in snapshot(project)

    text = memctl("export", "--markdown", str(out), "--project", str(project))
    assert "kept: entries/decision/n-2.md" in text.stdout


def test_export_removes_nothing_through_a_link(tmp_path: Path) -> None:
    project, out = exported(tmp_path)
    victim_dir = tmp_path / "elsewhere"
    victim_dir.mkdir()
    victim = victim_dir / "n-1.md"
    victim.write_bytes((out / "entries/decision/n-1.md").read_bytes())  # the very bytes memctl wrote
    forget(project, "entry:n-1")
    # the folder holding the stale file becomes a link to the victim's folder
    (out / "entries/decision").rename(out / "entries/was-decision")
    (out / "entries/decision").symlink_to(victim_dir)

    code, report = run("export", "--markdown", str(out), project=project)
    assert code == 7
    assert any(
        link["file"] == "entries/decision" or link["file"].startswith("entries/decision/")
        for link in report["links"]
    )  # type: ignore[attr-defined]
    assert victim.exists() and sha(victim) == sha(out / "entries/was-decision/n-1.md")
    assert (out / "entries/decision").is_symlink()

    # a link in the manifest's place is left alone, and nothing is removed by it
    manifest_victim = tmp_path / "manifest-victim.json"
    manifest_victim.write_text("{}")
    (out / MANIFEST).unlink()
    (out / MANIFEST).symlink_to(manifest_victim)
    code, report = run("export", "--markdown", str(out), project=project)
    assert code == 7 and MANIFEST in {link["file"] for link in report["links"]}  # type: ignore[attr-defined]
    assert manifest_victim.read_text() == "{}"


# -- the server stores -------------------------------------------------------------------------


@pytest.mark.integration
def test_new_files_prune_and_stale_files_on_valkey_and_dify(
    tmp_path: Path, valkey_url: str, dify: Dify
) -> None:
    project = configure(
        tmp_path / "p", entry_store=valkey_url, knowledge_store=dify.url, dify_api_key_file=str(dify.key_file)
    )
    seed(project)
    out = tmp_path / "out"
    assert memctl("export", "--markdown", str(out), "--project", str(project)).code == 0
    forget(project, "entry:n-1")  # a tombstone: a new file may bring the id back
    (out / "entries/decision/n-1.md").unlink()
    (out / "entries/decision/again.md").write_text("---\nid: n-1\ntitle: Back again\n---\nnew body\n")
    (out / "documents/knowledge/new-note.md").write_text("A note a person wrote.\n")
    (out / "documents/knowledge/deploy.md").unlink()

    store_before = snapshot(project)
    dry = run("import", "--markdown", str(out), "--prune", "--dry-run", project=project)[1]
    assert snapshot(project) == store_before
    code, report = run("import", "--markdown", str(out), "--prune", project=project)
    assert code == 0, report
    assert by_status(report) == by_status(dry)
    assert by_status(report)["created"] == {"entries/decision/again.md", "documents/knowledge/new-note.md"}
    assert by_status(report)["deleted"] == {"documents/knowledge/deploy.md"}
    items = snapshot(project)
    assert items["entry:n-1"][1]["title"] == "Back again"
    assert {info["name"] for info, _ in items.values() if info["kind"] == "document"} == {
        "rollback.md",
        "new-note.md",
    }

    forget(project, "entry:n-2")
    exported_again = run("export", "--markdown", str(out), project=project)[1]
    assert {r["file"] for r in exported_again["removed"]} == {  # type: ignore[attr-defined]
        "entries/decision/n-2.md",
        "entries/decision/again.md",  # entry:n-1's file is entries/decision/n-1.md again
    }
    assert set(files(out)) == {
        "entries/decision/n-1.md",
        "entries/decision/n-3.md",
        "documents/knowledge/new-note.md",
        "documents/knowledge/rollback.md",
    }


def test_an_unreadable_manifest_is_an_error_naming_it(tmp_path: Path) -> None:
    project, out = exported(tmp_path)
    (out / MANIFEST).write_text("{not json")
    before = tree_bytes(out)
    for command in ("export", "import"):
        code, report = run(command, "--markdown", str(out), project=project)
        assert code == 7 and MANIFEST in str(report["message"]) and "remove it" in str(report["message"])
    assert tree_bytes(out) == before
    (out / MANIFEST).unlink()
    assert run("export", "--markdown", str(out), project=project)[0] == 0


def test_the_import_table_names_documents_by_slot_and_name(tmp_path: Path) -> None:
    project, out = exported(tmp_path)
    edit(out / "documents/knowledge/deploy.md", "atom_type", "decision")
    (out / "documents/knowledge/new-note.md").write_text("A note a person wrote.\n")
    text = memctl("import", "--markdown", str(out), "--project", str(project))
    assert text.code == 0, text.stdout
    for name in ("deploy.md", "new-note.md"):
        [row] = [line for line in text.stdout.splitlines() if f"documents/knowledge/{name}" in line]
        assert f" knowledge/{name} " in row.split(f"documents/knowledge/{name}", 1)[1], row
    assert "doc:" not in text.stdout
    _, report = run("import", "--markdown", str(out), project=project)
    assert all(item["ref"].startswith(("doc:", "entry:")) for item in report["items"])  # type: ignore[attr-defined]
