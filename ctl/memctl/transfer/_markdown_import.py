"""`memctl import --markdown DIR`: what changed in an export folder, applied to the stores.

Each `*.md` file is one report: an exported file (its front matter has a digest) edited
since is saved through compare-and-set, a new file (no digest) creates its item, and a file
the manifest says memctl wrote that is no longer in the folder is reported, its item deleted
only with `prune` (through `forget_item`, as `memctl forget` does). With `dry_run` every
check runs and nothing is written: not the stores, not the folder.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_bridge import InvalidInput, LinkRefused, NotFound, write_atomically
from memory_bridge.core import (
    DocumentItem,
    EntryItem,
    Item,
    ItemStores,
    content_digest,
    create_item,
    forget_item,
    iter_items,
    preview_save,
    save_item,
)

from .._refs import document_ref, entry_ref
from ._export_manifest import Written, read_manifest, write_manifest, written
from ._markdown import ItemFile, NewItemFile, parse_file, read_text, render_item

__all__ = ["STATUSES", "import_tree"]

STATUSES = ("unchanged", "updated", "created", "conflict", "invalid", "link", "removed", "deleted")
"""What an import did with a file (or, with dry_run, would do)."""

_LINK = "a symbolic link: memctl neither reads nor writes through links, so it was left alone"


def _report(
    where: str, ref: str, status: str, detail: str = "", differs: tuple[str, ...] = ()
) -> dict[str, Any]:
    return {"file": where, "ref": ref, "status": status, "detail": detail, "differs": list(differs)}


@dataclass
class _Import:
    """One import's state: the items as read before it, and what it found and did."""

    stores: ItemStores
    directory: Path
    dry_run: bool
    prune: bool
    items: dict[str, Item]
    manifest: dict[str, Written] | None
    slots: list[str]
    types: set[str]
    present: set[str] = field(default_factory=set)  # refs of the files in the folder
    claimed: dict[str, str] = field(default_factory=dict)  # new item -> the file making it
    rewrite: dict[str, dict[str, Any]] = field(default_factory=dict)  # ref -> report of its file

    async def file(self, path: Path, where: str) -> dict[str, Any]:
        try:
            parsed = parse_file(
                read_text(path, root=self.directory),
                where,
                scope=self.stores.scope,
                slots=self.slots,
                types=self.types,
            )
        except LinkRefused:
            return _report(where, "", "link", _LINK)
        except UnicodeDecodeError:
            return _report(where, "", "invalid", "not UTF-8 text")
        except InvalidInput as exc:
            return _report(where, "", "invalid", exc.problem)
        if isinstance(parsed, NewItemFile):
            return await self.create(parsed, where)
        self.present.add(parsed.ref)
        return await self.edit(parsed, where)

    async def create(self, parsed: NewItemFile, where: str) -> dict[str, Any]:
        self.present.add(parsed.ref)
        other = self.claimed.setdefault(parsed.ref, where)
        if other != where:
            return _report(where, parsed.ref, "conflict", f"{other} makes the same item: nothing written")
        try:
            outcome = await create_item(
                self.stores,
                parsed.kind,
                parsed.identity,
                parsed.content,
                dry_run=self.dry_run,
                origin="memctl import",
            )
        except InvalidInput as exc:
            return _report(where, parsed.ref, "invalid", str(exc))
        report = _report(where, outcome.ref, outcome.status, outcome.detail)
        report["short_ref"] = document_ref(**parsed.identity) if parsed.kind == "document" else ""
        if outcome.status == "created" and not self.dry_run:
            self.rewrite[outcome.ref] = report
        return report

    async def edit(self, parsed: ItemFile, where: str) -> dict[str, Any]:
        current = self.items.get(parsed.ref)
        if current is None and self.manifest is not None and parsed.ref not in self.written_refs:
            base = "revision and digest" if parsed.kind == "entry" else "document_id and digest"
            detail = f"has a digest, but no export wrote {parsed.ref} here: for a new item, remove its {base}"
            return _report(where, parsed.ref, "invalid", detail)
        if not parsed.edited:
            return _report(where, parsed.ref, "unchanged")
        if current is None:
            return _report(
                where, parsed.ref, "conflict", f"{parsed.ref} no longer exists", tuple(parsed.content)
            )
        info = current.info()
        moved = [k for k, v in parsed.identity.items() if info[k] != v]
        if moved:
            detail = f"{moved[0]} cannot change (it is {info[moved[0]]!r})"
            if parsed.kind == "document":
                detail += "; for a new document, write a new file without document_id and digest"
            return _report(where, parsed.ref, "invalid", detail)
        try:
            if self.dry_run:
                outcome = preview_save(
                    current, parsed.content, base_digest=parsed.digest, base_revision=parsed.revision
                )
            else:
                outcome = await save_item(
                    self.stores,
                    current,
                    parsed.content,
                    base_digest=parsed.digest,
                    base_revision=parsed.revision,
                )
        except InvalidInput as exc:
            return _report(where, parsed.ref, "invalid", str(exc))
        report = _report(where, parsed.ref, outcome.status, outcome.detail, outcome.differs)
        if outcome.status == "updated" and not self.dry_run:
            self.rewrite[parsed.ref] = report
        return report

    @property
    def written_refs(self) -> set[str]:
        return {record.ref for record in (self.manifest or {}).values()}

    async def removed(self, seen: set[str], linked: list[str], unread: int) -> list[dict[str, Any]]:
        """A report for each file memctl wrote that the folder no longer has, whose item is
        in the store and in no other file; with `prune` the item is deleted, unless it
        changed since the file was written or `unread` files (invalid or links) might hold it."""
        reports = []
        for path, record in sorted((self.manifest or {}).items()):
            if path in seen or record.ref in self.present or any(path.startswith(f"{d}/") for d in linked):
                continue  # still there, moved, or behind a link (reported as such)
            item = self.items.get(record.ref)
            if item is None:
                self.forget(path)
                continue
            if not self.prune or unread:
                detail = f"not in the folder any more; {record.ref} stays in the store"
                detail += (
                    f" (--prune deletes nothing while {unread} file(s) could not be read)"
                    if self.prune
                    else " (--prune deletes it)"
                )
                reports.append(_report(path, record.ref, "removed", detail))
            elif content_digest(item.content()) != record.digest:
                detail = f"{record.ref} changed in the store since memctl wrote its file: not deleted"
                reports.append(_report(path, record.ref, "conflict", detail))
            else:
                reports.append(await self.delete(path, item))
        return reports

    async def delete(self, path: str, item: Item) -> dict[str, Any]:
        if self.dry_run:
            return _report(path, item.ref, "deleted", "not in the folder any more")
        try:
            action: str = (await forget_item(self.stores, item)).action
        except NotFound:
            action = "already gone"
        self.forget(path)
        return _report(path, item.ref, "deleted", f"not in the folder any more: {action}")

    def forget(self, path: str) -> None:
        if self.manifest is not None and not self.dry_run:
            self.manifest.pop(path, None)

    async def write_back(self) -> None:
        """Write each file saved or created again from the stored item (its new revision and
        digest, any secret redacted), and the manifest."""
        if self.rewrite:
            async for batch in iter_items(self.stores):
                for item in batch:
                    if (report := self.rewrite.get(item.ref)) is not None:
                        text = render_item(item)
                        if _rewrite(self.directory, report, text) and self.manifest is not None:
                            self.manifest[report["file"]] = written(item, text)
        if self.manifest is not None:
            with suppress(LinkRefused):  # a link swapped in for the manifest: left alone
                write_manifest(self.directory, self.manifest)


async def import_tree(
    stores: ItemStores, directory: Path, *, dry_run: bool = False, prune: bool = False
) -> list[dict[str, Any]]:
    """Apply what changed in the files under `directory`; one report per file, its `status`
    one of `STATUSES`. Edits go through compare-and-set and new files create items; a file
    memctl wrote that is gone is `removed` (its item kept) or, with `prune`, `deleted`.
    Each file saved or created is written again from the stored item, so importing the
    folder again finds it unchanged. With `dry_run` nothing is written anywhere."""
    items: dict[str, Item] = {}
    async for batch in iter_items(stores):  # no hits counted, one pass
        items.update((item.ref, item) for item in batch)
    try:
        manifest = read_manifest(directory)
    except LinkRefused:
        manifest = None  # reported with the other links below
    slots = list(await stores.knowledge.slot_ids())
    types = {item.entry.type for item in items.values() if isinstance(item, EntryItem)}
    run = _Import(stores, directory, dry_run, prune, items, manifest, slots, types)
    reports = []
    seen: set[str] = set()
    linked: list[str] = []
    for path in sorted(directory.rglob("*")):  # never descends into a linked folder
        where = path.relative_to(directory).as_posix()
        seen.add(where)
        if path.is_symlink():
            linked.append(where)
            reports.append(_report(where, "", "link", _LINK))
        elif path.suffix == ".md" and path.is_file():
            reports.append(await run.file(path, where))
    unread = sum(1 for r in reports if r["status"] == "link" or (r["status"] == "invalid" and not r["ref"]))
    reports += await run.removed(seen, linked, unread)
    if not dry_run:
        await run.write_back()
    for report in reports:
        report["short_ref"] = report.get("short_ref") or _short_ref(report["ref"], items)
    return reports


def _short_ref(ref: str, items: dict[str, Item]) -> str:
    """The item's reference as tables show it (`SLOT/NAME`, `entry:ID`)."""
    item = items.get(ref)
    if isinstance(item, DocumentItem):
        return document_ref(item.document.slot, item.document.name)
    if ref.startswith("entry:"):
        return entry_ref(ref.removeprefix("entry:"))
    return ref


def _rewrite(directory: Path, report: dict[str, Any], text: str) -> bool:
    """Write an applied file again from the stored item; a link that took its place (or a
    folder's) is left alone and the report says so (False)."""
    try:
        write_atomically(directory / report["file"], text, root=directory)
    except LinkRefused:
        report["detail"] = "; ".join(filter(None, [report["detail"], f"the file was not rewritten: {_LINK}"]))
        return False
    return True
