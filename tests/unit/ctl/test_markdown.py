"""Item files: names that stay the same from one memctl version to the next, and the format."""

from __future__ import annotations

from memctl.transfer._markdown import NewItemFile, parse_file, parse_item, relative_path, render_item
from memory_bridge.core import DocumentItem, EntryItem
from memory_bridge.stores import DocMetadata, Document, Entry


def entry(id: str, type: str = "decision", body: str = "text") -> EntryItem:
    return EntryItem(Entry(id, "T", body, type, ("a",), "s", "", "c", "u", 0, ""), 3)


def document(name: str, slot: str = "knowledge") -> DocumentItem:
    return DocumentItem(Document("d-1", slot, name, "text", True, 1.0, 2.0, DocMetadata(scope="app")))


def test_file_names_are_kept_when_safe_and_hashed_otherwise() -> None:
    assert str(relative_path(entry("n-000"))) == "entries/decision/n-000.md"
    assert str(relative_path(document("deploy.md"))) == "documents/knowledge/deploy.md"
    assert str(relative_path(entry("Team/Ops:1"))) == "entries/decision/team-ops-1-b9afc07e06.md"
    assert str(relative_path(document("Deploy.md", slot="Runbooks & Ops"))) == (
        "documents/runbooks-ops-651b356384/deploy-bd014805a6.md"
    )
    assert str(relative_path(document("deploy"))) == "documents/knowledge/deploy-b7bd55c11b.md"
    assert len(relative_path(entry("A" + "b" * 250)).name) < 100


def test_render_then_parse_gives_the_item_back() -> None:
    item = entry("n-1", body="---\nkind: document\n---\n\r\n")
    parsed = parse_item(render_item(item), "f.md")
    assert parsed.ref == "entry:n-1" and parsed.revision == 3 and not parsed.edited
    assert parsed.content == item.content()


def test_a_new_file_takes_its_identity_from_its_place_unless_its_front_matter_names_it() -> None:
    slot_folder = str(relative_path(document("x.md", slot="Runbooks & Ops")).parent)
    doc = parse_file("plain text\n", f"{slot_folder}/on-call.md", scope="app", slots=["Runbooks & Ops"])
    assert isinstance(doc, NewItemFile) and doc.identity == {"slot": "Runbooks & Ops", "name": "on-call.md"}
    assert doc.content["text"] == "plain text" and doc.content["scope"] == "app" and doc.content["enabled"]
    named = parse_file("---\nslot: ops\nname: Rota\n---\nx\n", "documents/a/b.md", scope="app")
    assert isinstance(named, NewItemFile) and named.ref == "ops/Rota"
    entry_file = parse_file("---\ntitle: T\n---\nbody\n", "entries/decision/n-9.md", scope="app")
    assert isinstance(entry_file, NewItemFile) and entry_file.ref == "entry:n-9"
    assert entry_file.content["type"] == "decision" and entry_file.content["tags"] == []
    exported = parse_file(render_item(entry("n-1")), "entries/decision/n-1.md", scope="app")
    assert not isinstance(exported, NewItemFile) and exported.revision == 3
