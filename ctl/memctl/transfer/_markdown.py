"""One memory item as a markdown file: YAML front matter for its metadata, then its text.

The same format serves `memctl edit` (one file in $EDITOR) and `memctl export/import
--markdown` (a tree of them). The front matter holds the item's identity (kind, id, slot,
document id, name), what a person may change (title, type, tags, ... for an entry; enabled
and the metadata fields for a document), the base a save is checked against (`revision` for
an entry, `digest` for both: the content as written out), and read-only facts (created,
updated, hits; a document's recall stamps and maintenance marks). Strings that span lines
are written quoted, so no front-matter line is ever `---`; the text after the closing `---`
is kept byte for byte (one final newline is added on writing and taken off on reading, so
editors that add one change nothing).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath
from typing import Any, Literal

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from memory_bridge import InvalidInput, open_beneath
from memory_bridge.core import DocumentItem, EntryItem, Item, content_digest, redact
from memory_bridge.stores import DocMetadata

__all__ = [
    "ItemFile",
    "NewItemFile",
    "parse_file",
    "parse_item",
    "read_text",
    "relative_path",
    "render_item",
]

_FENCE = "---\n"
_SAFE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")
_IDENTITY = {"entry": ("id",), "document": ("slot", "document_id", "name")}
_ENTRY_FACTS = ("created", "updated", "hits", "ttl")
_DOCUMENT_FACTS = ("created_at", "updated_at", "origin", "last_recalled_at", "recall_count", "marks")
_KIND_OF_FOLDER = {"entries": "entry", "documents": "document"}


def read_text(path: Path, *, root: Path | None = None) -> str:
    """A file's text exactly: line endings as they are (CRLF in a text stays CRLF). A link
    at `path`, or at a folder between `root` (default: its own folder) and it, is
    `LinkRefused`."""
    top = root or path.parent
    descriptor = open_beneath(top, PurePath(path.relative_to(top)), os.O_RDONLY | os.O_NONBLOCK)
    with open(descriptor, encoding="utf-8", newline="") as handle:
        return handle.read()


def _yaml() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.width = 2**31 - 1  # no folding: a string's line breaks stay escapes
    yaml.representer.sort_base_mapping_type_on_output = False
    return yaml


def render_item(item: Item) -> str:
    """The item as markdown with front matter."""
    content = item.content()
    text = content.pop("text")
    info = item.info()
    kind = info.pop("kind")
    identity = {k: info.pop(k) for k in _IDENTITY[kind]}
    base: dict[str, Any] = {"kind": kind, **identity}
    if isinstance(item, EntryItem):
        base["revision"] = info.pop("revision")
    base["digest"] = content_digest(item.content())
    out = io.StringIO()
    _yaml().dump({**base, **content, **info}, out)
    return f"{_FENCE}{out.getvalue()}{_FENCE}{text}\n"


@dataclass(frozen=True)
class ItemFile:
    """A parsed item file: which item, the base it was written from, and its content now."""

    kind: str
    identity: dict[str, str]
    digest: str
    revision: int | None
    content: dict[str, Any]
    facts: dict[str, Any]

    @property
    def ref(self) -> str:
        if self.kind == "entry":
            return f"entry:{self.identity['id']}"
        return f"doc:{self.identity['document_id']}"

    @property
    def edited(self) -> bool:
        return content_digest(self.content) != self.digest


def _front(text: str, where: str) -> tuple[dict[str, Any], str]:
    """The front matter (a mapping) and the text after it; `InvalidInput` naming `where`."""
    if not text.startswith(_FENCE):
        raise InvalidInput(where, "does not start with a --- front-matter line")
    head, sep, body = text[len(_FENCE) :].partition("\n" + _FENCE)
    if not sep:
        if not text[len(_FENCE) :].startswith(_FENCE):
            raise InvalidInput(where, "has no closing --- line after its front matter")
        head, body = "", text[2 * len(_FENCE) :]
    try:
        front = _yaml().load(head) if head.strip() else None
    except YAMLError as exc:
        raise InvalidInput(where, f"front matter is not valid YAML: {exc}") from None
    if not isinstance(front, dict):
        raise InvalidInput(where, "front matter is not a mapping")
    return front, body


def parse_item(text: str, where: str) -> ItemFile:
    """Read an item file; a malformed one is `InvalidInput` naming `where` and the problem."""
    front, body = _front(text, where)
    return _item_file(front, body, where)


def _item_file(front: dict[str, Any], body: str, where: str) -> ItemFile:
    kind = front.pop("kind", None)
    if kind not in _IDENTITY:
        raise InvalidInput(where, "front matter needs kind: entry or kind: document")
    identity = {}
    for key in _IDENTITY[kind]:
        value = front.pop(key, None)
        if not isinstance(value, str) or not value:
            raise InvalidInput(where, f"front matter needs {key} (the item's identity)")
        identity[key] = value
    digest = front.pop("digest", None)
    if not isinstance(digest, str):
        raise InvalidInput(where, "front matter needs digest (as exported)")
    revision = front.pop("revision", None) if kind == "entry" else None
    if kind == "entry" and (not isinstance(revision, int) or isinstance(revision, bool)):
        raise InvalidInput(where, "front matter needs revision (an integer, as exported)")
    facts_keys = _ENTRY_FACTS if kind == "entry" else _DOCUMENT_FACTS
    facts = {k: front.pop(k) for k in facts_keys if k in front}
    content = {**front, "text": body.removesuffix("\n")}
    return ItemFile(kind, identity, digest, revision, content, facts)


@dataclass(frozen=True)
class NewItemFile:
    """A file a person added: the item it makes (`identity`: an entry's id, or a document's
    slot and name) and its content, each field the file leaves out at its default."""

    kind: Literal["entry", "document"]
    identity: dict[str, str]
    content: dict[str, Any]

    @property
    def ref(self) -> str:
        if self.kind == "entry":
            return f"entry:{self.identity['id']}"
        return f"{self.identity['slot']}/{self.identity['name']}"


def parse_file(
    text: str, where: str, *, scope: str, slots: Iterable[str] = (), types: Iterable[str] = ()
) -> ItemFile | NewItemFile:
    """Read a file of an export folder (`where` is its path in the folder): one memctl wrote
    (its front matter has a digest) as `parse_item` does, any other as a new item.

    A new file's kind is its front matter's `kind`, else its top folder's (`entries/`,
    `documents/`). A new entry's `id` defaults to the file name without `.md`, its `type`
    to the folder it is in (`entries/TYPE/ID.md`); it needs a `title`; `tags` default to
    none, `source` to "memctl import", `project` to "". A new document's `slot` defaults to
    its folder (a slot's name, or the folder an export gives it), its `name` to the file
    name; `enabled` defaults to true, `scope` to the project's, the other metadata to empty;
    a document file may have no front matter at all. `digest`, `revision` and
    `document_id` belong to exported files only: a new file with one of them is
    `InvalidInput`, as is one that names no kind or no title."""
    front, body = _front(text, where) if text.startswith(_FENCE) else ({}, text)
    if "digest" in front:
        return _item_file(front, body, where)
    for key in ("revision", "document_id"):
        if key in front:
            raise InvalidInput(
                where,
                f"has {key} but no digest: an exported file keeps both (restore its digest to edit "
                f"that item); a new file has neither (remove {key} to make a new item)",
            )
    parts = PurePosixPath(where).parts
    kind = front.pop("kind", _KIND_OF_FOLDER.get(parts[0]) if len(parts) > 1 else None)
    if kind not in _IDENTITY:
        raise InvalidInput(
            where,
            "is a new file of no known kind: put it in entries/TYPE/ or documents/SLOT/, "
            "or give its front matter kind: entry or kind: document",
        )
    folder = parts[-2] if len(parts) == 3 and _KIND_OF_FOLDER.get(parts[0]) == kind else None
    for key in _ENTRY_FACTS if kind == "entry" else _DOCUMENT_FACTS:
        front.pop(key, None)  # read-only facts, as in an exported file
    if kind == "entry":
        type_ = _folder_names(types).get(folder, folder) if folder else None
        identity = {"id": front.pop("id", PurePosixPath(where).stem)}
        defaults: dict[str, Any] = {"type": type_, "tags": [], "source": "memctl import", "project": ""}
        if "title" not in front:
            raise InvalidInput(where, "is a new entry without a title: give its front matter title: ...")
    else:
        slot = _folder_names(slots).get(folder, folder) if folder else None
        identity = {"slot": front.pop("slot", slot), "name": front.pop("name", PurePosixPath(where).name)}
        defaults = {"enabled": True, **DocMetadata(scope=scope).to_dict()}
    for key, value in identity.items():
        if not isinstance(value, str) or not value:
            raise InvalidInput(where, f"is a new {kind} without its {key}: give its front matter {key}: ...")
    content = {k: v for k, v in defaults.items() if v is not None} | front
    return NewItemFile(kind, identity, {**content, "text": body.removesuffix("\n")})


def _folder_names(names: Iterable[str]) -> dict[str, str]:
    """Each name by the folder an export gives it."""
    return {_safe(name): name for name in names}


def _safe(name: str, *, extension: str = "") -> str:
    """A file or folder name for `name`: itself when already safe, else a slug (of the name
    redacted: no secret in a file name) plus a hash of the name, so two names never share a
    file and the same name always gets the same one."""
    if _SAFE.match(name) and (not extension or name.endswith(extension)) and redact(name) == name:
        return name
    stem = redact(name.removesuffix(extension) if extension else name)
    slug = re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).strip("-.")[:80] or "item"
    return f"{slug}-{hashlib.sha256(name.encode()).hexdigest()[:10]}{extension}"


def relative_path(item: Item) -> PurePosixPath:
    """Where an item's file goes in an export: entries/TYPE/ID.md, documents/SLOT/NAME.md."""
    if isinstance(item, DocumentItem):
        return PurePosixPath(
            "documents", _safe(item.document.slot), _safe(item.document.name, extension=".md")
        )
    return PurePosixPath("entries", _safe(item.entry.type), _safe(item.entry.id) + ".md")
