"""Item files: names that stay the same from one memctl version to the next, and the format."""

from __future__ import annotations

from memctl._markdown import parse_item, relative_path, render_item
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
