"""The web view's pages (GET) and corrections (POST, answered by a redirect), each one call
into `memory_bridge.core`, the functions behind the MCP tools and the look-up commands."""

from __future__ import annotations

from urllib.parse import quote, urlencode

import anyio
from starlette.responses import RedirectResponse, Response

from memory_bridge import Conflict, InvalidInput, NotFound
from memory_bridge.core import (
    DocumentItem,
    EntryItem,
    HistoryTarget,
    Lesson,
    SaveOutcome,
    content_digest,
    deleted_documents,
    deleted_entries,
    document_history_with_diffs,
    find_item,
    forget_item,
    history_of,
    item_versions,
    list_lessons,
    locate_document,
    nothing_found,
    rollback_document,
    rollback_item,
    rollback_to,
    save_item,
    search_items,
)
from memory_bridge.stores import Document, EntryFilter

from ..api.status import components
from ..capture._log import read_events
from ..capture._paths import CaptureDirs
from ._view import Handler, View

__all__ = ["PAGES", "WRITES"]

_PAGE = 50  # rows of a list page
_HISTORY = 20  # versions an entry or document page shows
_EVENTS = 200  # capture log events shown


def _back(path: str, done: str, **params: str) -> RedirectResponse:
    return RedirectResponse(f"{path}?{urlencode({**params, 'done': done})}", status_code=303)


def _saved(outcome: SaveOutcome, operation: str) -> str:
    if outcome.status == "conflict":
        raise Conflict(
            f"{outcome.detail}; it now differs in: {', '.join(outcome.differs)}. Nothing was written: "
            "reload the page to see the current version",
            operation=operation,
        )
    return outcome.status + (f" ({outcome.detail})" if outcome.detail else "")


async def _entry(view: View, id: str) -> EntryItem:
    item = await find_item(view.items, f"entry:{id}")
    assert isinstance(item, EntryItem)
    return item


async def _document(view: View, id: str) -> DocumentItem:
    item = await find_item(view.items, f"doc:{id}")
    assert isinstance(item, DocumentItem)
    return item


# -- reading ---------------------------------------------------------------------------------


async def home(view: View) -> Response:
    return RedirectResponse("/entries", status_code=303)


async def entries(view: View) -> Response:
    offset = view.number("offset")
    page = await view.items.entries.list_entries(EntryFilter(), sort="updated", offset=offset, limit=_PAGE)
    return view.page("entries.html.j2", entries=page.entries, total=page.total, offset=offset, size=_PAGE)


async def search(view: View) -> Response:
    query, kind, slot, tag = (view.text(name).strip() for name in ("q", "type", "slot", "tag"))
    best_effort = view.text("best_effort") == "1"
    result = hint = None
    if query:
        result = await search_items(
            view.items,
            query,
            slots=[slot] if slot else None,
            type=kind or None,
            tags=[tag] if tag else None,
            limit=_PAGE,
            best_effort=best_effort,
        )
        if not result.hits:
            hint = nothing_found(result.threshold, what="entry or document", flag="“best effort”")
    slots = list(await view.items.knowledge.slot_ids())
    return view.page(
        "search.html.j2",
        query=query,
        type=kind,
        slot=slot,
        tag=tag,
        slots=slots,
        result=result,
        best_effort=best_effort,
        hint=hint,
    )


async def knowledge(view: View) -> Response:
    slots = list(await view.items.knowledge.slot_ids())
    slot = view.text("slot") or (slots[0] if slots else "")
    if slot and slot not in slots:
        raise NotFound(f"no knowledge slot {slot!r} (slots: {', '.join(slots) or 'none'})", operation="ui")
    offset = view.number("offset")
    documents: list[Document] = []
    total = 0
    if slot:
        documents, total = await view.items.knowledge.list_documents(slot, offset=offset, limit=_PAGE)
    return view.page(
        "knowledge.html.j2",
        slots=slots,
        slot=slot,
        documents=documents,
        total=total,
        offset=offset,
        size=_PAGE,
    )


async def entry(view: View) -> Response:
    id = view.text("id")
    try:
        item = await _entry(view, id)
    except NotFound:
        return await _deleted_entry(view, id)
    versions = await item_versions(view.items, item.entry.id, _HISTORY)
    return view.page(
        "entry.html.j2",
        item=item,
        content=item.content(),
        info=item.info(),
        digest=content_digest(item.content()),
        versions=versions,
    )


async def document(view: View) -> Response:
    id = view.text("id")
    try:
        item = await _document(view, id)
    except NotFound:
        return await _deleted_document(view, id)
    doc = item.document
    history = await document_history_with_diffs(view.items.knowledge, doc.slot, doc.name, limit=_HISTORY)
    return view.page(
        "document.html.j2",
        item=item,
        document=doc,
        content=item.content(),
        digest=content_digest(item.content()),
        history=history,
    )


async def _deleted_document(view: View, id: str) -> Response:
    """A deleted document's old link: says so, and offers its last version back."""
    try:
        slot, name = await locate_document(view.items.knowledge, None, document_id=id)
    except NotFound:
        raise NotFound(f"no document {id}, live or deleted", operation="ui") from None
    history = await document_history_with_diffs(view.items.knowledge, slot, name, limit=_HISTORY)
    return view.page("document-deleted.html.j2", 404, history=history)


async def _deleted_entry(view: View, id: str) -> Response:
    """A deleted entry's old link: says so, and offers its versions back."""
    if not id or not await view.items.entries.history(id, 1):
        raise NotFound(f"no entry {id}, live or deleted", operation="ui")
    history = await history_of(view.items, HistoryTarget("entry", id=id), limit=_HISTORY)
    return view.page("entry-deleted.html.j2", 404, history=history)


async def deleted(view: View) -> Response:
    slot = view.text("slot") or None
    return view.page(
        "deleted.html.j2",
        documents=await deleted_documents(view.items.knowledge, slot),
        entries=[] if slot else await deleted_entries(view.items),
        slot=slot,
    )


async def lessons(view: View) -> Response:
    pattern = view.text("pattern").strip()
    sort = view.text("sort") or "recall"
    if sort not in ("recall", "recent"):
        raise InvalidInput("sort", f"must be recall or recent, not {sort!r}")
    found = await list_lessons(
        view.items, pattern=pattern or None, sort="recent" if sort == "recent" else "recall"
    )
    groups: dict[str, list[Lesson]] = {}
    for lesson in found:
        groups.setdefault(lesson.error_pattern, []).append(lesson)
    return view.page(
        "lessons.html.j2", groups=sorted(groups.items()), pattern=pattern, sort=sort, count=len(found)
    )


async def capture(view: View) -> Response:
    log = CaptureDirs(view.settings.project).log
    events = await anyio.to_thread.run_sync(read_events, log, _EVENTS)
    shown = [
        {
            "ts": event.get("ts", ""),
            "event": event.get("event", ""),
            "outcome": event.get("outcome", event.get("action", "")),
            "fields": {k: v for k, v in event.items() if k not in ("ts", "event", "outcome", "action")},
        }
        for event in reversed(events)
    ]
    return view.page("capture.html.j2", events=shown, log=str(log))


async def status(view: View) -> Response:
    report = await components(view.settings, view.items.entries, view.items.knowledge)
    return view.page(
        "status.html.j2",
        report=report,
        project=str(view.settings.project),
        scope=view.settings.project_scope,
    )


# -- correcting ------------------------------------------------------------------------------


async def rollback(view: View) -> Response:
    item = await _entry(view, view.field("id"))
    revision = view.field_number("revision")
    outcome = await rollback_item(
        view.items,
        item,
        revision,
        base_digest=view.field("base_digest"),
        base_revision=view.field_number("base_revision"),
    )
    done = f"rolled back to revision {revision}: {_saved(outcome, 'rollback')}"
    return _back(f"/entry/{quote(item.entry.id, safe='')}", done)


async def document_rollback(view: View) -> Response:
    slot, name, version = view.field("slot"), view.field("name"), view.field_number("version")
    done = await rollback_document(
        view.items.knowledge, slot, name, version, expected_version=view.field_number("expected_version")
    )
    back = " (it was deleted and is back)" if done.undeleted else ""
    note = f"{slot}/{name}: version {version} restored as version {done.version}{back}"
    return _back(f"/document/{quote(done.documentId, safe='')}", note)


async def entry_restore(view: View) -> Response:
    id, version = view.field("id"), view.field_number("version")
    done = await rollback_to(
        view.items,
        HistoryTarget("entry", id=id),
        version,
        expected_version=view.field_number("expected_version"),
    )
    back = " (it was deleted and is back)" if done.undeleted else ""
    note = f"entry:{id}: version {version} restored as version {done.version}{back}"
    return _back(f"/entry/{quote(id, safe='')}", note)


async def disable(view: View) -> Response:
    item = await _document(view, view.field("id"))
    done = await forget_item(view.items, item, disable=True)
    return _back(f"/document/{quote(item.document.id, safe='')}", f"{done.ref}: {done.action}")


async def enable(view: View) -> Response:
    item = await _document(view, view.field("id"))
    outcome = await save_item(
        view.items,
        item,
        {**item.content(), "enabled": True},
        base_digest=view.field("base_digest"),
        base_revision=None,
    )
    return _back(f"/document/{quote(item.document.id, safe='')}", f"enabled: {_saved(outcome, 'enable')}")


async def delete(view: View) -> Response:
    item = await _document(view, view.field("id"))
    if view.text("confirm") != "yes":
        raise InvalidInput("confirm", f"tick the box to confirm deleting {item.ref} ({item.label})")
    done = await forget_item(view.items, item)
    return _back("/knowledge", f"{done.ref} ({item.label}): {done.action}", slot=item.document.slot)


PAGES: dict[str, Handler] = {
    "/": home,
    "/entries": entries,
    "/search": search,
    "/knowledge": knowledge,
    "/entry/{id:path}": entry,
    "/document/{id:path}": document,
    "/deleted": deleted,
    "/lessons": lessons,
    "/capture": capture,
    "/status": status,
}
WRITES: dict[str, Handler] = {
    "/rollback": rollback,
    "/document-disable": disable,
    "/document-enable": enable,
    "/document-delete": delete,
    "/document-rollback": document_rollback,
    "/entry-restore": entry_restore,
}
