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
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from memory_bridge import InvalidInput, LinkRefused, open_beneath, private_dir, write_atomically
from memory_bridge.core import (
    DocumentItem,
    EntryItem,
    Item,
    ItemStores,
    content_digest,
    iter_items,
    redact,
    save_item,
)

__all__ = [
    "ItemFile",
    "export_tree",
    "import_tree",
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
_LINK = "a symbolic link: memctl neither reads nor writes through links, so it was left alone"


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


def parse_item(text: str, where: str) -> ItemFile:
    """Read an item file; a malformed one is `InvalidInput` naming `where` and the problem."""
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


def _left_alone(where: str, exc: LinkRefused) -> dict[str, str]:
    return {"file": where, "reason": exc.problem}


async def export_tree(stores: ItemStores, directory: Path) -> dict[str, Any]:
    """Write every live entry and every document as one file under `directory` (0700 folders,
    0600 files, each replaced whole); the counts written. A link in the tree (a file's or a
    folder's place) is not written through: it is left alone and listed under `links`."""
    counts = {"entries": 0, "documents": 0}
    links: list[dict[str, str]] = []
    private_dir(directory)
    async for batch in iter_items(stores):
        for item in batch:
            relative = relative_path(item)
            try:
                write_atomically(directory / relative, render_item(item), mode=0o600, root=directory)
            except LinkRefused as exc:
                links.append(_left_alone(relative.as_posix(), exc))
                continue
            counts["entries" if isinstance(item, EntryItem) else "documents"] += 1
    files = counts["entries"] + counts["documents"]
    return {"directory": str(directory), **counts, "files": files, "links": links}


def _report(
    where: str, ref: str, status: str, detail: str = "", differs: tuple[str, ...] = ()
) -> dict[str, Any]:
    return {"file": where, "ref": ref, "status": status, "detail": detail, "differs": list(differs)}


async def _import_one(
    stores: ItemStores, items: dict[str, Item], directory: Path, path: Path, where: str
) -> dict[str, Any]:
    try:
        parsed = parse_item(read_text(path, root=directory), where)
    except LinkRefused:
        return _report(where, "", "link", _LINK)
    except UnicodeDecodeError:
        return _report(where, "", "invalid", "not UTF-8 text")
    except InvalidInput as exc:
        return _report(where, "", "invalid", exc.problem)
    current = items.get(parsed.ref)
    if not parsed.edited:
        return _report(where, parsed.ref, "unchanged")
    if current is None:
        return _report(where, parsed.ref, "conflict", f"{parsed.ref} no longer exists", tuple(parsed.content))
    info = current.info()
    moved = [k for k, v in parsed.identity.items() if info[k] != v]
    if moved:
        return _report(where, parsed.ref, "invalid", f"{moved[0]} cannot change (it is {info[moved[0]]!r})")
    try:
        outcome = await save_item(
            stores, current, parsed.content, base_digest=parsed.digest, base_revision=parsed.revision
        )
    except InvalidInput as exc:
        return _report(where, parsed.ref, "invalid", str(exc))
    return _report(where, parsed.ref, outcome.status, outcome.detail, outcome.differs)


async def import_tree(stores: ItemStores, directory: Path) -> list[dict[str, Any]]:
    """Apply the edits made to the item files under `directory`, each through compare-and-set;
    one report per file: unchanged, updated, conflict (nothing written) or invalid.

    An updated file is written again from the stored item (its new revision and digest, and
    any secret redacted), so importing the folder again finds it unchanged."""
    items: dict[str, Item] = {}
    async for batch in iter_items(stores):  # no hits counted, one pass
        items.update((item.ref, item) for item in batch)
    reports = []
    updated: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.rglob("*")):  # never descends into a linked folder
        where = path.relative_to(directory).as_posix()
        if path.is_symlink():
            reports.append(_report(where, "", "link", _LINK))
        elif path.suffix == ".md" and path.is_file():
            report = await _import_one(stores, items, directory, path, where)
            reports.append(report)
            if report["status"] == "updated":
                updated[report["ref"]] = report
    if updated:
        async for batch in iter_items(stores):
            for item in batch:
                if item.ref in updated:
                    _rewrite(directory, updated[item.ref], render_item(item))
    return reports


def _rewrite(directory: Path, report: dict[str, Any], text: str) -> None:
    """Write an applied file again from the stored item; a link that took its place (or a
    folder's) is left alone and the report says so."""
    try:
        write_atomically(directory / report["file"], text, root=directory)
    except LinkRefused:
        report["detail"] = "; ".join(filter(None, [report["detail"], f"the file was not rewritten: {_LINK}"]))
