"""`memctl export --markdown DIR`: every item as a file, and memctl's own stale files removed.

Each live entry and document is written as one file (see `_markdown`), and the folder's
manifest (see `_export_manifest`) records it. A file the previous export (or import)
wrote that this export did not (its item was deleted, or now has another file) is removed
if its bytes are still the ones memctl wrote; one a person edited since is kept and
reported, and a file memctl never wrote is never touched. Nothing is written, read or
removed through a link.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from memory_bridge import LinkRefused, private_dir, remove_beneath, write_atomically
from memory_bridge.core import EntryItem, ItemStores, iter_items

from ._export_manifest import MANIFEST, Written, read_manifest, write_manifest, written
from ._markdown import relative_path, render_item

__all__ = ["export_tree"]


def _left_alone(where: str, exc: LinkRefused) -> dict[str, str]:
    return {"file": where, "reason": exc.problem}


async def export_tree(stores: ItemStores, directory: Path) -> dict[str, Any]:
    """Write every live entry and every document as one file under `directory` (0700 folders,
    0600 files, each replaced whole), then remove memctl's files that are stale; the counts,
    the files `removed`, the stale files `kept` (edited by a person) and the `links` left
    alone (a link where a file, a folder or the manifest would be: never written through)."""
    links: list[dict[str, str]] = []
    private_dir(directory)
    try:
        before = read_manifest(directory) or {}
    except LinkRefused as exc:
        links.append(_left_alone(MANIFEST, exc))
        before = {}
    counts = {"entries": 0, "documents": 0}
    now: dict[str, Written] = {}
    placed: dict[str, str] = {}  # ref -> its file this time (written or refused)
    async for batch in iter_items(stores):
        for item in batch:
            relative = relative_path(item).as_posix()
            placed[item.ref] = relative
            text = render_item(item)
            try:
                write_atomically(directory / relative, text, mode=0o600, root=directory)
            except LinkRefused as exc:
                links.append(_left_alone(relative, exc))
                continue
            now[relative] = written(item, text)
            counts["entries" if isinstance(item, EntryItem) else "documents"] += 1
    removed, kept = _remove_stale(directory, before, now, placed, links)
    if not any(link["file"] == MANIFEST for link in links):
        try:
            write_manifest(directory, now)
        except LinkRefused as exc:
            links.append(_left_alone(MANIFEST, exc))
    files = counts["entries"] + counts["documents"]
    return {
        "directory": str(directory),
        **counts,
        "files": files,
        "removed": removed,
        "kept": kept,
        "links": links,
    }


def _remove_stale(
    directory: Path,
    before: dict[str, Written],
    now: dict[str, Written],
    placed: dict[str, str],
    links: list[dict[str, str]],
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Remove each file of `before` that this export did not write, if unedited; what was
    removed and what was kept. A kept file stays in the manifest (`now`): it still belongs
    to its item, so an import knows that item was there."""
    removed: list[dict[str, str]] = []
    kept: list[dict[str, str]] = []
    refused = {link["file"] for link in links}
    for path, record in sorted(before.items()):
        if path in now or path in refused:
            continue
        try:
            outcome = remove_beneath(directory, PurePosixPath(path), sha256=record.sha256)
        except LinkRefused as exc:
            links.append(_left_alone(path, exc))
            continue
        moved = placed.get(record.ref)
        if outcome == "removed":
            reason = f"{record.ref} is now in {moved}" if moved else f"{record.ref} is no longer in the store"
            removed.append({"file": path, "ref": record.ref, "reason": reason})
        elif outcome == "changed":
            reason = "edited since memctl wrote it, so it was left alone"
            if not moved:
                reason += f" ({record.ref} is no longer in the store)"
            kept.append({"file": path, "ref": record.ref, "reason": reason})
            now[path] = record
    return removed, kept
