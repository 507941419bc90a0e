"""`memctl export|import --markdown`: a lossless round trip, and edits applied through CAS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from memctl.transfer._markdown import parse_item, read_text
from memory_bridge import EntryWrite, load_settings
from memory_bridge.core import ItemStores, iter_items
from memory_bridge.stores import DocMetadata, open_entry_store, open_knowledge_store

from .conftest import memctl

TRICKY_TEXTS = [
    "",
    "---\nkind: entry\nid: forged\nrevision: 99\n---\nnot front matter",
    "---\n",
    "ends with blank lines\n\n\n",
    "\nstarts with a newline",
    "windows\r\nline\r\nendings\r\n",
    "unicode: Grüße, 日本語, emoji 😀, RTL שלום, combining e\u0301, line sep \u2028 end",
    "yaml-ish: true\n- list\n? key\n: value\n...\n",
    "tabs\tand  spaces  ",
    "x" * 5000,
]


def write_text(path: Path, text: str) -> None:
    """Write as an editor would: the bytes of `text`, line endings as they are."""
    path.write_bytes(text.encode("utf-8"))


def text_of(n: int) -> str:
    return TRICKY_TEXTS[n % len(TRICKY_TEXTS)] + ("" if n % 3 else f" #{n}")


def entry_write(n: int) -> EntryWrite:
    ids = [f"e-{n:04}", f"Team/Ops:{n}@host+x", "A" + "b" * 240 + f"{n:05}", f"ünï-{n}".encode().hex()]
    titles = ["Note", "Title: with --- and\nnewline", "«Ünïcödé» ✓", "null", "yes", "0012"]
    return EntryWrite(
        id=ids[n % len(ids)],
        title=titles[n] if 3 <= n <= 5 else f"{titles[n % len(titles)]} {n}",
        body=text_of(n),
        type=["decision", "Pattern", "state_x"][n % 3],
        tags=tuple(dict.fromkeys(["ops", f"t{n % 7}", "Ünï tag", "a: b"][: n % 5])),
        source=["test", "agent: claude", "ünï"][n % 3],
        project=["", "app", "日本"][n % 3],
    )


def doc_of(n: int, scope: str) -> tuple[str, str, str, DocMetadata]:
    slot = ["knowledge", "plans", "Runbooks & Ops"][n % 3]
    names = [f"doc-{n}.md", f"Doc {n} / with slash.md", f"{'长' * 120} {n}", f"lesson {n}", f"CON{n}.md"]
    metadata = DocMetadata(
        atom_type=["project-lore", "plan", "self-improvement-lesson", ""][n % 4],
        tags=tuple(dict.fromkeys(["x", f"t{n % 5}", "ünï"][: n % 4])),
        project_module=["", "auth", "front end"][n % 3],
        language=["", "python"][n % 2],
        task_type=["", "bugfix"][n % 2],
        error_pattern=["", f"timeout-{n}"][n % 2],
        scope=scope,
    )
    return slot, names[n % len(names)], text_of(n + 1), metadata


def seed(project: Path, entries: int, docs: int) -> None:
    async def run() -> None:
        settings = load_settings(project=project)
        entry_store = open_entry_store(settings)
        knowledge = open_knowledge_store(settings)
        try:
            for n in range(entries):
                await entry_store.set(entry_write(n), ttl=None, if_version=None, operation_id=None)
            await knowledge.create_slot("Runbooks & Ops")
            for n in range(docs):
                slot, name, text, metadata = doc_of(n, settings.project_scope)
                outcome = await knowledge.upsert(slot, name, text, metadata, origin="test")
                if n % 10 == 0:
                    await knowledge.set_enabled(slot, outcome.document_id, False)
        finally:
            await entry_store.close()
            await knowledge.close()

    anyio.run(run)


def snapshot(project: Path) -> dict[str, Any]:
    """Every item's ref -> (its identity and facts, its content), read from the stores."""

    async def run() -> dict[str, Any]:
        settings = load_settings(project=project)
        entries = open_entry_store(settings)
        knowledge = open_knowledge_store(settings)
        try:
            stores = ItemStores(entries, knowledge, scope=settings.project_scope)
            found: dict[str, Any] = {}
            async for batch in iter_items(stores):
                for item in batch:
                    found[item.ref] = (item.info(), item.content())
            return found
        finally:
            await entries.close()
            await knowledge.close()

    return anyio.run(run)


def files(directory: Path) -> dict[str, Path]:
    return {p.relative_to(directory).as_posix(): p for p in sorted(directory.rglob("*.md"))}


def parsed(directory: Path) -> dict[str, Any]:
    found = {}
    for where, path in files(directory).items():
        item = parse_item(read_text(path), where)
        found[item.ref] = item
    return found


def test_round_trip_of_a_thousand_items_is_lossless(tmp_path: Path) -> None:
    project = tmp_path / "p"
    seed(project, entries=600, docs=400)
    before = snapshot(project)
    assert len(before) == 1000
    out = tmp_path / "out"
    exported = memctl("export", "--markdown", str(out), "--project", str(project), "--json")
    assert exported.code == 0, exported.stderr
    assert exported.json | {"directory": ""} == {
        "directory": "",
        "entries": 600,
        "documents": 400,
        "files": 1000,
        "removed": [],
        "kept": [],
        "links": [],
    }
    written = files(out)
    assert len(written) == 1000
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in written.values())
    assert all(d.stat().st_mode & 0o777 == 0o700 for d in [out, *(p.parent for p in written.values())])
    assert all(len(part.encode()) <= 255 for name in written for part in name.split("/"))

    # every file says exactly what the store holds
    back = parsed(out)
    assert set(back) == set(before)
    for ref, (info, content) in before.items():
        item = back[ref]
        assert item.content == content, ref
        assert {k: info[k] for k in item.identity} == item.identity
        if item.kind == "entry":
            assert item.revision == info["revision"]
        assert not item.edited

    # importing the untouched files changes nothing
    applied = memctl("import", "--markdown", str(out), "--project", str(project), "--json")
    assert applied.code == 0 and applied.json["unchanged"] == 1000 and applied.json["updated"] == 0
    assert snapshot(project) == before

    # the same items export to the same files, byte for byte
    again = tmp_path / "again"
    assert memctl("export", "--markdown", str(again), "--project", str(project)).code == 0
    assert {k: read_text(v) for k, v in files(again).items()} == {k: read_text(v) for k, v in written.items()}

    # rewrite every item's text and metadata through the files: the store takes them exactly
    for n, path in enumerate(written.values()):
        text = read_text(path)
        head = text[4:].partition("\n---\n")[0]
        new_body = text_of(n + 5) + "\n"
        write_text(path, "---\n" + head.replace("tags: []", "tags:\n- added ✓") + "\n---\n" + new_body)
    edited = parsed(out)
    updated = memctl("import", "--markdown", str(out), "--project", str(project), "--json")
    assert updated.code == 0, updated.stdout
    changed = sum(1 for item in edited.values() if item.edited)
    assert updated.json["updated"] == changed and changed > 500
    after = snapshot(project)
    for ref, item in edited.items():
        assert after[ref][1] == item.content, ref
    for ref, item in parsed(out).items():  # updated files now carry the new revision and digest
        assert not item.edited and item.content == after[ref][1]
        assert item.revision == after[ref][0].get("revision")
    again = memctl("import", "--markdown", str(out), "--project", str(project), "--json")
    assert again.json["unchanged"] == 1000


def edit(path: Path, key: str, value: str) -> None:
    """Set one front-matter line of an item file."""
    lines = read_text(path).split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{key}: "))
    lines[at] = f"{key}: {value}"
    write_text(path, "\n".join(lines))


def agent_sets(project: Path, write: EntryWrite) -> None:
    async def run() -> None:
        store = open_entry_store(load_settings(project=project))
        try:
            await store.set(write, ttl=None, if_version=None, operation_id=None)
        finally:
            await store.close()

    anyio.run(run)


def test_import_applies_edits_and_reports_a_concurrent_change_as_a_conflict(tmp_path: Path) -> None:
    project = tmp_path / "p"
    seed(project, entries=12, docs=6)
    out = tmp_path / "out"
    assert memctl("export", "--markdown", str(out), "--project", str(project)).code == 0
    by_ref = {parse_item(read_text(p), w).ref: p for w, p in files(out).items()}
    first, second, third = (by_ref[f"entry:e-{n:04}"] for n in (0, 4, 8))
    doc = next(p for ref, p in by_ref.items() if ref.startswith("doc:") and "doc-0.md" in p.name)
    edit(first, "title", "Person fixed 0")
    edit(second, "source", "person")
    edit(third, "type", "reviewed")
    edit(doc, "language", "rust")
    edit(doc, "enabled", "true")
    # meanwhile an agent rewrites the second entry and an entry nobody edited
    agent_sets(
        project, EntryWrite("e-0004", "Agent's title", "agent body", "decision", ("ops",), "agent", "app")
    )
    agent_sets(project, EntryWrite("e-0012", "Agent's other", "x", "decision", (), "agent", ""))
    # a file broken beyond reading, and one whose identity was changed
    (out / "entries" / "broken.md").write_text("---\nkind: [unclosed\n---\nbody\n")
    renamed = next(p for ref, p in by_ref.items() if ref.startswith("doc:") and p != doc)
    edit(renamed, "name", "another-name.md")
    edit(renamed, "language", "go")

    result = memctl("import", "--markdown", str(out), "--project", str(project), "--json")
    assert result.code == 4, result.stdout
    report = {r["ref"] or r["file"]: r for r in result.json["items"]}
    assert result.json["ok"] is False and result.json["error"] == "Conflict"
    assert report["entry:e-0000"]["status"] == "updated"
    assert report["entry:e-0008"]["status"] == "updated"
    assert (
        report[next(r for r in report if r.startswith("doc:") and report[r]["file"].endswith("doc-0.md"))][
            "status"
        ]
        == "updated"
    )
    conflict = report["entry:e-0004"]
    assert conflict["status"] == "conflict" and "revision 1" in conflict["detail"]
    assert "source" in conflict["differs"]
    assert report["entries/broken.md"]["status"] == "invalid"
    assert any(r["status"] == "invalid" and "name cannot change" in r["detail"] for r in report.values())
    assert result.json["unchanged"] == 18 - 4 - 1  # every item but the edited and the renamed

    now = snapshot(project)
    assert now["entry:e-0000"][1]["title"] == "Person fixed 0"
    assert now["entry:e-0008"][1]["type"] == "reviewed"
    assert now["entry:e-0004"][1]["title"] == "Agent's title"  # the agent's write stands
    assert now["entry:e-0012"][1]["title"] == "Agent's other"
    doc_ref = next(r for r, (info, _) in now.items() if info.get("name") == "doc-0.md")
    assert now[doc_ref][1]["language"] == "rust" and now[doc_ref][1]["enabled"] is True

    text_run = memctl("import", "--markdown", str(out), "--project", str(project))
    assert text_run.code == 4 and "conflict" in text_run.stdout and "Conflict" not in text_run.stdout
    assert "not overwritten" in text_run.stderr


def test_import_errors(tmp_path: Path) -> None:
    project = tmp_path / "p"
    seed(project, entries=2, docs=0)
    missing = memctl("import", "--markdown", str(tmp_path / "nope"), "--project", str(project))
    assert missing.code == 2
    out = tmp_path / "out"
    assert memctl("export", "--markdown", str(out), "--project", str(project)).code == 0
    path = next(iter(files(out).values()))
    edit(path, "type", "1-not-a-type")
    bad = memctl("import", "--markdown", str(out), "--project", str(project), "--json")
    assert bad.code == 7 and bad.json["invalid"] == 1
    assert "type" in json.dumps(bad.json["items"])
    empty = tmp_path / "empty"
    empty.mkdir()
    assert memctl("export", "--markdown", str(out), "--project", str(empty), "--json").code == 3


@pytest.mark.parametrize(
    "text",
    ["no front matter", "---\nkind: entry\n", "---\n- a list\n---\n", "---\nkind: entry\nid: x\n---\n"],
)
def test_malformed_files_are_invalid_input(text: str) -> None:
    from memory_bridge import InvalidInput

    with pytest.raises(InvalidInput):
        parse_item(text, "f.md")


def test_a_documents_recall_stamps_and_marks_are_shown_and_kept_through_an_edit(tmp_path: Path) -> None:
    project = tmp_path / "p"
    seed(project, entries=0, docs=2)  # knowledge/doc-0.md and another
    settings = load_settings(project=project)

    async def upkeep() -> None:
        store = open_knowledge_store(settings)
        try:
            doc = await store.find("knowledge", "doc-0.md")
            assert doc is not None
            await store.stamp_recalls("knowledge", [doc.id], now=1_790_000_000.0, window=0)
            await store.set_marks("knowledge", doc.id, {"stale": "true"})
        finally:
            await store.close()

    anyio.run(upkeep)
    out = tmp_path / "out"
    assert memctl("export", "--markdown", str(out), "--project", str(project)).code == 0
    path = next(p for name, p in files(out).items() if name.endswith("doc-0.md"))
    item = parse_item(read_text(path), str(path))
    assert item.facts["recall_count"] == 1 and item.facts["last_recalled_at"] == 1_790_000_000.0
    assert item.facts["marks"] == {"stale": "true"}

    # the facts are read-only: changing one in the file changes nothing
    edit(path, "recall_count", "7")
    imported = ("import", "--markdown", str(out), "--project", str(project), "--json")
    assert memctl(*imported).json["unchanged"] == 2
    # an edit of the text keeps the recall stamps and the marks
    write_text(path, read_text(path).rstrip("\n") + " Amended.\n")
    assert memctl(*imported).json["updated"] == 1
    after = parse_item(read_text(path), str(path))
    assert after.content["text"].endswith("Amended.")
    shown = memctl("show", f"doc:{item.identity['document_id']}", "--project", str(project), "--json").json
    assert (shown["recall_count"], shown["marks"]) == (1, {"stale": "true"})
