"""Memory as a person sees it: entries and knowledge documents as one kind of item.

An item is found by a reference (`entry:ID`, `doc:ID`, `SLOT/NAME`, or a bare id or name
looked up everywhere), searched together with the other kind, and saved through
compare-and-set: an entry with `if_version`, a document after checking that its content
still has the digest the writer started from. A save that lost a race is reported, never
applied over the other writer's change.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

import anyio.to_thread
from pydantic import TypeAdapter, ValidationError

from .._errors import InvalidInput, NotFound
from ..stores._base import Entry, EntryFilter, EntryStore, EntryWrite
from ..stores._knowledge import METADATA_FIELDS, DocMetadata, Document, KnowledgeFilter, KnowledgeStore
from ..stores._relevance import Evidence, calibration, coverage
from ._entries import set_entry
from ._fields import Body, EntryType, ProjectName, Source, Tags, Title
from ._freshness import Freshness, rerank
from ._item_results import EntryRevision, ForgetResult, ItemHit, ItemSearchResult, Lesson
from ._redact import redact
from ._redact_fields import redact_metadata

__all__ = [
    "CUT_MARK",
    "DocumentItem",
    "EntryItem",
    "Item",
    "ItemStores",
    "SaveOutcome",
    "content_digest",
    "find_item",
    "forget_item",
    "item_versions",
    "iter_items",
    "list_lessons",
    "rollback_item",
    "save_item",
    "search_items",
]

CUT_MARK = "…"
"""Ends an id a table cut short (`entry:0123456789ab…`); `find_item` takes such a ref."""

_LESSON_SLOT = "self_improvement"
_LESSON_TYPE = "self-improvement-lesson"
_PAGE = 200


@dataclass(frozen=True, slots=True)
class ItemStores:
    """Both stores of a project and the settings their writes follow."""

    entries: EntryStore
    knowledge: KnowledgeStore
    scope: str
    redact_entries: bool = True
    max_entries_warn: int = 10_000
    freshness: Freshness = field(default_factory=Freshness)  # age and use in ranking documents
    threshold: float = field(default_factory=lambda: calibration().threshold)  # least relevance a hit needs


@dataclass(frozen=True, slots=True)
class EntryItem:
    """A live entry of the versioned entry store, at `revision`."""

    entry: Entry
    revision: int

    @property
    def ref(self) -> str:
        return f"entry:{self.entry.id}"

    @property
    def label(self) -> str:
        return self.entry.title

    def content(self) -> dict[str, Any]:
        """What a person may change: the fields a write replaces, and the text."""
        e = self.entry
        return {
            "title": e.title,
            "type": e.type,
            "tags": list(e.tags),
            "source": e.source,
            "project": e.project,
            "text": e.body,
        }

    def info(self) -> dict[str, Any]:
        """Identity and what the store keeps by itself (read-only)."""
        e = self.entry
        return {
            "kind": "entry",
            "id": e.id,
            "revision": self.revision,
            "created": e.created,
            "updated": e.updated,
            "hits": e.hits,
            "ttl": e.ttl,
        }


@dataclass(frozen=True, slots=True)
class DocumentItem:
    """A document of a knowledge slot."""

    document: Document

    @property
    def ref(self) -> str:
        return f"doc:{self.document.id}"

    @property
    def label(self) -> str:
        return self.document.name

    def content(self) -> dict[str, Any]:
        d = self.document
        return {"enabled": d.enabled, **d.metadata.to_dict(), "text": d.text}

    def info(self) -> dict[str, Any]:
        d = self.document
        return {
            "kind": "document",
            "slot": d.slot,
            "document_id": d.id,
            "name": d.name,
            "created_at": d.created_at,
            "updated_at": d.updated_at,
            "origin": d.origin,
            "last_recalled_at": d.last_recalled_at,
            "recall_count": d.recall_count,
            "marks": dict(d.marks),
        }


Item = EntryItem | DocumentItem


def content_digest(content: Mapping[str, Any]) -> str:
    """A fingerprint of an item's content: equal digests, equal content."""
    payload = json.dumps(dict(content), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


# -- finding ---------------------------------------------------------------------------------


async def _entry(stores: ItemStores, id: str) -> EntryItem | None:
    found = await stores.entries.get(id)
    return None if found is None else EntryItem(*found)


async def _entries_starting(stores: ItemStores, prefix: str) -> list[Item]:
    """The live entries whose id starts with `prefix` (a table cuts long ids: `entry:ID…`)."""
    ids = [
        record.id
        async for batch in stores.entries.export_records()
        for record in batch
        if record.entry is not None and record.id.startswith(prefix)
    ]
    return [e for id in ids if (e := await _entry(stores, id)) is not None]


async def _documents(stores: ItemStores, *, id: str | None, name: str | None, slot: str | None) -> list[Item]:
    slots = list(await stores.knowledge.slot_ids())
    if slot is not None:
        if slot not in slots:
            return []
        slots = [slot]
    found: list[Item] = []
    for name_of_slot in slots:
        if id is not None:
            doc = await stores.knowledge.get(name_of_slot, id)
        else:
            doc = await stores.knowledge.find(name_of_slot, name or "")
        if doc is not None:
            found.append(DocumentItem(doc))
    return found


async def find_item(stores: ItemStores, ref: str) -> Item:
    """The one item `ref` names: `entry:ID`, `doc:ID`, `SLOT/NAME`, or a bare id or name.
    `entry:ID…` (an id a table cut short) names the one entry whose id starts so.

    A bare reference is looked up as an entry id, a document id and a document name in
    every slot; more than one match is an error listing the precise references. Reading an
    entry counts a hit, as memory_get does."""
    ref = ref.strip()
    if not ref:
        raise InvalidInput("reference", "must not be empty")
    if ref.startswith("entry:") and ref.endswith(CUT_MARK):
        candidates: list[Item] = await _entries_starting(stores, ref[6:].removesuffix(CUT_MARK))
    elif ref.startswith("entry:"):
        candidates = [e] if (e := await _entry(stores, ref[6:])) else []
    elif ref.startswith("doc:"):
        candidates = await _documents(stores, id=ref[4:], name=None, slot=None)
    else:
        candidates = [e] if (e := await _entry(stores, ref)) else []
        candidates += await _documents(stores, id=ref, name=None, slot=None)
        candidates += await _documents(stores, id=None, name=ref, slot=None)
        slot, sep, name = ref.partition("/")
        if sep:
            candidates += await _documents(stores, id=None, name=name, slot=slot)
    return only_one(candidates, ref, missing=f"no entry or document {ref!r}", operation="find")


class _Referenced(Protocol):
    @property
    def ref(self) -> str: ...


R = TypeVar("R", bound=_Referenced)


def only_one(candidates: Sequence[R], ref: str, *, missing: str, operation: str) -> R:
    """The one item `ref` found: `missing` when none, an error listing the precise
    references when it names several."""
    unique = list({item.ref: item for item in candidates}.values())
    if not unique:
        raise NotFound(missing, operation=operation)
    if len(unique) > 1:
        refs = ", ".join(item.ref for item in unique)
        raise InvalidInput("reference", f"{ref!r} names more than one item; use one of: {refs}")
    return unique[0]


# -- searching -------------------------------------------------------------------------------


async def search_items(
    stores: ItemStores,
    query: str,
    *,
    slots: list[str] | None = None,
    type: str | None = None,
    tags: list[str] | None = None,
    limit: int = 20,
    threshold: float | None = None,
    best_effort: bool = False,
) -> ItemSearchResult:
    """Entries and documents of this project matching `query`, ranked together by
    calibrated relevance (0..1, `stores._relevance`).

    A document's score is its store's; an entry's comes from the `keyword` model (the share
    of the query's words its title, tags and body contain), as the entry store ranks by
    words. Hits under `threshold` (default: the project's measured one) are left out, or
    with `best_effort` kept and marked. `slots` limits the search to those knowledge slots
    (and leaves entries out)."""
    query = query.strip()
    if not query:
        raise InvalidInput("query", "must not be empty")
    applied = stores.threshold if threshold is None else threshold
    tag_tuple = tuple(dict.fromkeys(tags or ()))
    found_hits: list[tuple[ItemHit, bool | None]] = []  # each hit, and whether it is relevant if known
    degraded: list[str] = []
    if not slots:
        page = await stores.entries.search(
            EntryFilter(tags=tag_tuple, type=type), query, offset=0, limit=limit
        )
        if page.extra.get("degraded"):
            degraded.append(f"entries: {page.extra['degraded']}")
        texts = [(entry.title, " ".join([*entry.tags, entry.body])) for entry in page.entries]
        shares = await anyio.to_thread.run_sync(coverage, query, texts)
        for rank, (entry, share) in enumerate(zip(page.entries, shares, strict=True), 1):
            hit = ItemHit(
                kind="entry",
                ref=f"entry:{entry.id}",
                where=f"entry {entry.id}",
                id=entry.id,
                name=entry.title,
                type=entry.type,
                tags=list(entry.tags),
                snippet=entry.body[:200],
                rank=rank,
                score=calibration().score("keyword", Evidence(coverage=share)),
            )
            found_hits.append((hit, None))
    known = list(await stores.knowledge.slot_ids())
    unknown = [s for s in slots or () if s not in known]
    if unknown:
        raise InvalidInput("slot", f"unknown slot {unknown[0]!r} (known: {', '.join(known)})")
    flt = KnowledgeFilter(atom_type=type, tags=tag_tuple, scope=stores.scope)
    depth = stores.freshness.depth(limit)
    searched = None if best_effort else applied
    found = await stores.knowledge.search(slots or known, query, flt, top_k=depth, score_threshold=searched)
    if found.degraded:
        degraded.append(f"knowledge: {found.degraded}")
    relevance = {doc.document_id: doc.score for doc in found.hits}  # before age and use re-score them
    for rank, doc in enumerate(rerank(found.hits, stores.freshness, time.time())[:limit], 1):
        hit = ItemHit(
            kind="document",
            ref=f"doc:{doc.document_id}",
            where=f"{doc.slot}/{doc.document_name}",
            id=doc.document_id,
            slot=doc.slot,
            name=doc.document_name,
            type=doc.metadata.atom_type,
            tags=list(doc.metadata.tags),
            snippet=doc.content[:200],
            rank=rank,
            score=doc.score,
        )
        found_hits.append((hit, relevance[doc.document_id] >= applied))
    judged = [(hit, hit.score >= applied if relevant is None else relevant) for hit, relevant in found_hits]
    kept = [(hit, relevant) for hit, relevant in judged if best_effort or relevant]
    kept.sort(key=lambda pair: -pair[0].score)  # stable: at equal score, entries first
    hits = [hit for hit, _ in kept[:limit]]
    for hit, relevant in kept[:limit]:
        if not relevant:
            hit.best_effort = True
    result = ItemSearchResult(query=query, count=len(hits), threshold=applied, hits=hits, degraded=degraded)
    if best_effort:
        result.best_effort = True
    return result


# -- history ---------------------------------------------------------------------------------


def _version_text(snapshot: Mapping[str, Any]) -> list[str]:
    head = [
        f"{key}: {json.dumps(snapshot.get(key), ensure_ascii=False)}"
        for key in ("title", "type", "tags", "source", "project")
    ]
    return [*head, "", *str(snapshot.get("body", "")).splitlines()]


async def item_versions(stores: ItemStores, id: str, limit: int) -> list[EntryRevision]:
    """An entry's last `limit` versions, newest first, each with the unified diff from the
    version before it (the oldest one shown against nothing)."""
    versions = await stores.entries.history(id, limit + 1)  # one more: the last diff's base
    out: list[EntryRevision] = []
    for index, version in enumerate(versions[:limit]):
        older = versions[index + 1] if index + 1 < len(versions) else None
        before = _version_text(older) if older is not None else []
        label_before = f"revision {older.get('rev')}" if older is not None else "(nothing)"
        diff = difflib.unified_diff(
            before, _version_text(version), label_before, f"revision {version.get('rev')}", lineterm=""
        )
        out.append(
            EntryRevision(
                index=version.get("index", index),
                revision=version.get("rev"),
                operation=version.get("operation"),
                updated=version.get("updated"),
                diff="\n".join(diff),
            )
        )
    return out


# -- saving ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SaveOutcome:
    """What a save did: `unchanged`, `updated` or `conflict` (nothing written)."""

    status: Literal["unchanged", "updated", "conflict"]
    ref: str
    detail: str = ""
    differs: tuple[str, ...] = ()  # conflict: the fields where the stored item differs from the save


def _differs(current: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> tuple[str, ...]:
    if current is None:
        return tuple(wanted)
    return tuple(k for k in wanted if current.get(k) != wanted[k])


def _checked(adapter: Any, field: str, value: Any) -> Any:
    try:
        return TypeAdapter(adapter).validate_python(value, strict=True)
    except ValidationError as exc:
        raise InvalidInput(field, exc.errors()[0]["msg"]) from None


def _entry_write(id: str, content: Mapping[str, Any]) -> EntryWrite:
    tags = _checked(Tags, "tags", content.get("tags"))
    return EntryWrite(
        id=id,
        title=_checked(Title, "title", content.get("title")),
        body=_checked(Body, "text", content.get("text")),
        type=_checked(EntryType, "type", content.get("type")),
        tags=tuple(dict.fromkeys(tags)),
        source=_checked(Source, "source", content.get("source")),
        project=_checked(ProjectName, "project", content.get("project")),
    )


def _document_content(content: Mapping[str, Any]) -> tuple[str, DocMetadata, bool]:
    text = _checked(str, "text", content.get("text"))
    enabled = _checked(bool, "enabled", content.get("enabled"))
    tags = _checked(list[str], "tags", content.get("tags"))
    fields = {f: _checked(str, f, content.get(f)) for f in METADATA_FIELDS if f != "tags"}
    return text, DocMetadata(tags=tuple(dict.fromkeys(tags)), **fields), enabled


def _unknown_fields(item: Item, content: Mapping[str, Any]) -> None:
    allowed = set(item.content())
    extra = sorted(set(content) - allowed)
    missing = sorted(allowed - set(content))
    if extra:
        raise InvalidInput(
            extra[0], f"is not a field a person can change in an item of kind {item.info()['kind']}"
        )
    if missing:
        raise InvalidInput(missing[0], "is missing")


async def save_item(
    stores: ItemStores, item: Item, content: Mapping[str, Any], *, base_digest: str, base_revision: int | None
) -> SaveOutcome:
    """Write `content` over `item` unless someone changed the item since the writer read it.

    `base_digest` is the digest of the content the writer started from (content equal to
    it is not an edit: nothing is written); `base_revision` the entry revision it read.
    A lost race writes nothing and says where the stored item differs from `content`."""
    _unknown_fields(item, content)
    wanted = dict(content)
    if content_digest(wanted) == base_digest:
        return SaveOutcome("unchanged", item.ref)
    if isinstance(item, EntryItem):
        write = _entry_write(item.entry.id, wanted)
        ttl = int(item.entry.ttl) if item.entry.ttl else None
        result = await set_entry(
            stores.entries,
            write,
            ttl=ttl,
            if_version=base_revision,
            operation_id=None,
            max_entries_warn=stores.max_entries_warn,
            redact_secrets=stores.redact_entries,
        )
        if result.ok:
            return SaveOutcome("updated", item.ref, f"revision {result.revision}")
        current = await _entry(stores, item.entry.id)
        now = None if current is None else current.content()
        if now == wanted:
            return SaveOutcome("unchanged", item.ref)
        where = "deleted" if current is None else f"now at revision {current.revision}"
        return SaveOutcome(
            "conflict",
            item.ref,
            f"entry {item.entry.id} changed after revision {base_revision} ({where})",
            _differs(now, wanted),
        )
    doc = item.document
    text, metadata, enabled = _document_content(wanted)
    fresh = await stores.knowledge.get(doc.slot, doc.id)
    now = None if fresh is None else DocumentItem(fresh).content()
    if now == wanted:
        return SaveOutcome("unchanged", item.ref)
    if now is None or content_digest(now) != base_digest:
        where = "deleted" if now is None else "changed"
        return SaveOutcome(
            "conflict",
            item.ref,
            f"document {doc.slot}/{doc.name} was {where} meanwhile",
            _differs(now, wanted),
        )
    assert fresh is not None
    if (text, metadata) != (fresh.text, fresh.metadata):
        await stores.knowledge.upsert(
            doc.slot, fresh.name, redact(text), redact_metadata(metadata), origin="memctl"
        )
    if enabled != fresh.enabled:
        await stores.knowledge.set_enabled(doc.slot, doc.id, enabled)
    return SaveOutcome("updated", item.ref)


_HISTORY_DEPTH = 1000  # the oldest revision a roll-back looks for


async def rollback_item(
    stores: ItemStores, item: EntryItem, revision: int, *, base_digest: str, base_revision: int
) -> SaveOutcome:
    """Write an entry's content at `revision` back over it, with compare-and-set: nothing is
    written if the entry changed since the writer read it at `base_revision`."""
    versions = await stores.entries.history(item.entry.id, _HISTORY_DEPTH)
    snapshot = next((v for v in versions if v.get("rev") == revision), None)
    if snapshot is None:
        raise NotFound(f"entry {item.entry.id} has no revision {revision}", operation="rollback")
    if "body" not in snapshot or "title" not in snapshot:
        raise InvalidInput("revision", f"revision {revision} of entry {item.entry.id} holds no content")
    content = {key: snapshot.get(key) for key in ("title", "type", "tags", "source", "project")}
    content["text"] = snapshot["body"]
    return await save_item(stores, item, content, base_digest=base_digest, base_revision=base_revision)


async def forget_item(stores: ItemStores, item: Item, *, disable: bool = False) -> ForgetResult:
    """Delete an entry (its history keeps a tombstone) or delete or disable a document."""
    if isinstance(item, EntryItem):
        if disable:
            raise InvalidInput("disable", "entries cannot be disabled, only deleted")
        outcome = await stores.entries.delete(item.entry.id)
        if outcome is None:
            raise NotFound(f"entry {item.entry.id} is already gone", operation="forget")
        return ForgetResult(ref=item.ref, action="deleted", revision=outcome.revision)
    doc = item.document
    if disable:
        done = await stores.knowledge.set_enabled(doc.slot, doc.id, False)
    else:
        done = await stores.knowledge.delete(doc.slot, doc.id)
    if not done:
        raise NotFound(f"document {doc.slot}/{doc.name} is already gone", operation="forget")
    return ForgetResult(ref=item.ref, action="disabled" if disable else "deleted")


# -- listing ---------------------------------------------------------------------------------


async def _slot_documents(knowledge: KnowledgeStore, slot: str) -> AsyncIterator[list[Document]]:
    offset = 0
    while True:
        page, total = await knowledge.list_documents(slot, offset=offset, limit=_PAGE)
        if page:
            yield page
        offset += len(page)
        if not page or offset >= total:
            return


async def iter_items(stores: ItemStores) -> AsyncIterator[list[Item]]:
    """Every live entry (without counting hits) and every document of every slot, in batches."""
    async for batch in stores.entries.export_records():
        live = [EntryItem(r.entry, r.revision) for r in batch if r.entry is not None]
        if live:
            yield list(live)
    for slot in await stores.knowledge.list_slots():
        async for docs in _slot_documents(stores.knowledge, slot.name):
            yield [DocumentItem(d) for d in docs]


async def list_lessons(
    stores: ItemStores, *, pattern: str | None = None, sort: Literal["recall", "recent"] = "recall"
) -> list[Lesson]:
    """This project's lessons (the self_improvement slot), with their error pattern.

    Recall count and last recall (epoch seconds, None if never) come from recall stamping.
    `recall` sorts by recall count (then error pattern), `recent` by last recall, then last
    update, newest first."""
    names = set(await stores.knowledge.slot_ids())
    if _LESSON_SLOT not in names:
        return []
    needle = (pattern or "").lower()
    lessons: list[Lesson] = []
    async for docs in _slot_documents(stores.knowledge, _LESSON_SLOT):
        for d in docs:
            meta = d.metadata
            if meta.scope not in (stores.scope, "") or (meta.atom_type not in (_LESSON_TYPE, "")):
                continue
            if needle and needle not in meta.error_pattern.lower():
                continue
            lessons.append(
                Lesson(
                    ref=f"doc:{d.id}",
                    name=d.name,
                    error_pattern=meta.error_pattern,
                    project_module=meta.project_module,
                    enabled=d.enabled,
                    updated_at=d.updated_at,
                    recall_count=d.recall_count,
                    last_recalled=d.last_recalled_at,
                )
            )
    if sort == "recent":
        lessons.sort(key=lambda x: (x.last_recalled or 0, x.updated_at), reverse=True)
    else:
        lessons.sort(key=lambda x: (-(x.recall_count or 0), x.error_pattern, x.name))
    return lessons
