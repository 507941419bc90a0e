"""Backup and restore of a project's memory: entries with history, documents with metadata.

A restore verifies the whole archive and compares it with the target stores before it
writes anything; afterwards it compares every item again. A target that already holds
different data is refused unless the caller merges or replaces (the target ends up holding
exactly the archive). A merge adds the archive's items the target lacks and keeps the
target's others; for an entry both hold, the archive's version becomes a new revision on
top of the target's, so the target's history survives; for a document both hold, the
archive's text wins. What an archive holds is redacted before it is compared or written,
like any other write (its entries only when entry redaction is on).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from .._cause import current_cause
from .._errors import Conflict, NotFound
from ..core._redact import redact
from ..core._redact_fields import redact_metadata, redact_record, redact_version
from ..stores._base import EntryRecord, EntryStore
from ..stores._knowledge import DocMetadata, Document, KnowledgeStore
from ..stores._version_log import DocumentVersion
from ..stores._versioned import VersionedKnowledgeStore
from ._archive import (
    ArchivedDocument,
    ArchiveWriter,
    Manifest,
    iter_entry_batches,
    verify_archive,
)
from ._entry_merge import Seen, merge_entry, seen
from ._transfer import same_fingerprint

__all__ = ["Progress", "RestoreMode", "RestoreReport", "backup", "restore"]

RestoreMode = Literal["refuse", "merge", "replace"]
Progress = Callable[[str, int, int | None], None]  # (phase, items done now, total if known)
_PAGE = 100
_OPERATION = "restore"
DocKey = tuple[str, str]  # (slot, name)


def _redact_archived(document: ArchivedDocument) -> ArchivedDocument:
    """An archived document with its name, text and metadata redacted."""
    return replace(
        document,
        name=redact(document.name),
        text=redact(document.text),
        metadata=redact_metadata(document.metadata),
    )


def _quiet(phase: str, done: int, total: int | None) -> None:
    """The default progress callback: report nothing."""


async def _documents(store: KnowledgeStore, slot: str) -> list[Document]:
    found: list[Document] = []
    offset = 0
    while True:
        try:
            page, total = await store.list_documents(slot, offset=offset, limit=_PAGE)
        except NotFound:  # a slot named in settings but never created
            return found
        found += page
        offset += len(page)
        if not page or offset >= total:
            return found


def _archived(doc: Document) -> ArchivedDocument:
    return ArchivedDocument(
        doc.slot,
        doc.name,
        doc.text,
        doc.enabled,
        doc.metadata,
        doc.origin,
        doc.id,
        doc.created_at,
        doc.updated_at,
        doc.last_recalled_at,
        doc.recall_count,
        dict(doc.marks),
    )


async def backup(
    entries: EntryStore,
    knowledge: KnowledgeStore,
    output: Path,
    *,
    scope: str = "",
    progress: Progress = _quiet,
) -> Manifest:
    """Write every entry record and every document of every slot to `output`; `scope`, the
    project's name in knowledge memory, goes into the manifest so a restore elsewhere keeps it."""
    source = {"entries": entries.url, "knowledge": knowledge.url, **({"scope": scope} if scope else {})}
    writer = ArchiveWriter(output, source)
    try:
        # The bars count live entries (what `count` counts; a deleted entry's record, its
        # history only, rides along uncounted) and documents. Each phase ends by settling
        # its total on what was written, should anything have come or gone meanwhile.
        total = await entries.count()
        progress("entries", 0, total)
        live = 0
        async for batch in entries.export_records():
            writer.add_entries(batch)
            now_live = sum(1 for record in batch if record.entry is not None)
            live += now_live
            progress("entries", now_live, max(total, live))
        progress("entries", 0, live)
        slots = await knowledge.list_slots()
        total = sum(s.document_count for s in slots)
        progress("documents", 0, total)
        written = 0
        for slot in slots:
            writer.slots.append({"name": slot.name, "description": slot.description})
            for doc in await _documents(knowledge, slot.name):
                writer.add_document(_archived(doc))
                written += 1
                progress("documents", 1, max(total, written))
        progress("documents", 0, written)
        if isinstance(knowledge, VersionedKnowledgeStore):
            async for versions in knowledge.log.export():
                writer.add_versions(versions)
    except BaseException:
        writer.discard()
        raise
    return writer.finish()


@dataclass
class RestoreReport:
    manifest: Manifest
    scope: str = ""  # the scope the archive's documents carry in the target (after any re-homing)
    entries_state: str = ""  # empty | identical | different (the target before the restore)
    knowledge_state: str = ""
    entries_written: int = 0
    entries_removed: int = 0
    entries_revised: list[str] = field(default_factory=list)  # merge: the archive's version put on top
    documents_written: int = 0
    documents_removed: int = 0
    histories_restored: int = 0  # documents that took the archive's version history
    histories_kept: int = 0  # documents whose own history the target kept (the archive's left out)
    mismatched_entries: list[str] = field(default_factory=list)
    mismatched_documents: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatched_entries and not self.mismatched_documents


async def _entries_seen(store: EntryStore) -> dict[str, Seen]:
    found: dict[str, Seen] = {}
    async for batch in store.export_records():
        found.update((r.id, seen(r)) for r in batch)
    return found


def _compare(
    wanted: dict[str, Seen], found: dict[str, Seen], *, exact: bool, revised: frozenset[str] = frozenset()
) -> list[str]:
    """Ids whose target record differs from the archive (and extras, when `exact`); for the
    `revised` ids only the current content must match, their history being the target's."""

    def differs(i: str, want: Seen) -> bool:
        if i not in found:
            return True
        if i in revised:
            return want.content != found[i].content
        return not same_fingerprint(want.fingerprint, found[i].fingerprint)

    bad = [i for i, want in wanted.items() if differs(i, want)]
    if exact:
        bad += [i for i in found if i not in wanted]
    return sorted(bad)


async def _target_documents(store: KnowledgeStore) -> dict[DocKey, Document]:
    return {(d.slot, d.name): d for s in await store.list_slots() for d in await _documents(store, s.name)}


_NEVER_MAINTAINED = ArchivedDocument("", "", "", True, DocMetadata()).upkeep()  # a new document's


def _same(a: ArchivedDocument, b: ArchivedDocument) -> bool:
    return a.content() == b.content() and a.upkeep() == b.upkeep()


async def _restore_upkeep(
    store: KnowledgeStore, doc: ArchivedDocument, document_id: str, current: Document | None
) -> None:
    """The archive's marks (unsetting the target's others) and recall stamps."""
    unset = {name: "" for name in (current.marks if current else {}) if name not in doc.marks}
    if doc.marks or unset:
        await store.set_marks(doc.slot, document_id, {**unset, **doc.marks})
    await store.set_recalls(
        doc.slot, document_id, last_recalled_at=doc.last_recalled_at, recall_count=doc.recall_count
    )


def _doc_mismatches(
    wanted: dict[DocKey, ArchivedDocument], found: dict[DocKey, Document], *, exact: bool
) -> list[str]:
    bad = [k for k, doc in wanted.items() if k not in found or not _same(_archived(found[k]), doc)]
    if exact:
        bad += [k for k in found if k not in wanted]
    return sorted(f"{slot}/{name}" for slot, name in bad)


def _state(differences: list[str], target_size: int) -> str:
    if not target_size:
        return "empty"
    return "different" if differences else "identical"


def _refuse(what: str, url: str, differences: list[str]) -> Conflict:
    sample = ", ".join(differences[:5]) + (" ..." if len(differences) > 5 else "")
    return Conflict(
        f"the {what} store {url} already holds different data ({len(differences)} item(s) differ: {sample}); "
        "nothing was written. Pass --merge to add the archive to it (where both have an entry, the archive's "
        "version goes on top of its history) or --replace to make it hold exactly the archive",
        operation=_OPERATION,
    )


async def _write_entries(
    store: EntryStore,
    path: Path,
    stale: list[str],
    shared: dict[str, Seen],
    total: int,
    progress: Progress,
    redact_entries: bool,
) -> tuple[int, int, list[str]]:
    """Write the archive's records; those of `shared` ids go on top of the target's own."""
    for start in range(0, len(stale), 500):
        await store.import_records(
            [EntryRecord(id=i, entry=None, revision=0, history=()) for i in stale[start : start + 500]]
        )
    written = 0
    revised: list[str] = []
    progress("entries", 0, total)
    for batch in iter_entry_batches(path):
        if redact_entries:
            batch = [redact_record(r) for r in batch]
        fresh = [r for r in batch if r.id not in shared]
        await store.import_records(fresh)
        written += len(fresh)
        for record in batch:
            if record.id in shared and await merge_entry(store, record, shared[record.id]):
                revised.append(record.id)
        progress("entries", len(batch), total)
    return written + len(revised), len(stale), revised


async def _write_documents(
    store: KnowledgeStore,
    manifest: Manifest,
    wanted: dict[DocKey, ArchivedDocument],
    found: dict[DocKey, Document],
    mode: RestoreMode,
    progress: Progress,
) -> tuple[int, int]:
    removed = 0
    if mode == "replace":
        for key, present in found.items():
            if key not in wanted:
                await store.delete(present.slot, present.id)
                removed += 1
    existing = set(await store.slot_ids())
    for slot in manifest.slots:
        if slot["name"] not in existing:
            await store.create_slot(slot["name"], slot.get("description", ""))
    written = 0
    progress("documents", 0, len(wanted))
    for key, doc in wanted.items():
        current = found.get(key)
        if current is not None and _same(_archived(current), doc):
            progress("documents", 1, len(wanted))
            continue
        document_id = current.id if current is not None else ""
        if current is None or _archived(current).content() != doc.content():
            outcome = await store.upsert(doc.slot, doc.name, doc.text, doc.metadata, origin=doc.origin)
            enabled = True if current is None or outcome.created else current.enabled
            if enabled != doc.enabled:
                await store.set_enabled(doc.slot, outcome.document_id, doc.enabled)
            document_id = outcome.document_id
        if (_archived(current).upkeep() if current else _NEVER_MAINTAINED) != doc.upkeep():
            await _restore_upkeep(store, doc, document_id, current)
        written += 1
        progress("documents", 1, len(wanted))
    return written, removed


def _archive_scope(manifest: Manifest, docs: dict[DocKey, ArchivedDocument]) -> str:
    """The scope the archive's project had: from its manifest, else the most common one."""
    counts = Counter(doc.metadata.scope for doc in docs.values() if doc.metadata.scope)
    return manifest.source.get("scope") or (counts.most_common(1)[0][0] if counts else "")


def _rehomed(docs: dict[DocKey, ArchivedDocument], old: str, new: str) -> dict[DocKey, ArchivedDocument]:
    """The documents with scope `old` given scope `new` instead."""
    return {
        key: replace(doc, metadata=replace(doc.metadata, scope=new)) if doc.metadata.scope == old else doc
        for key, doc in docs.items()
    }


def _rehomed_version(version: DocumentVersion, old: str, new: str) -> DocumentVersion:
    metadata = version.state.metadata
    if metadata.scope != old:
        return version
    return replace(version, state=replace(version.state, metadata=replace(metadata, scope=new)))


async def restore(
    entries: EntryStore,
    knowledge: KnowledgeStore,
    path: Path,
    *,
    mode: RestoreMode,
    scope: str | None = None,
    progress: Progress = _quiet,
    redact_entries: bool = True,
) -> RestoreReport:
    """Check the archive and both targets, then write, then compare every item.

    With `scope`, the archive project's documents are restored under that scope instead
    of their own (re-homing them in another project). Secrets in the archive are redacted
    (in entries only if `redact_entries`, the `redact_entries` setting)."""
    progress("verifying", 0, None)
    wanted_entries: dict[str, Seen] = {}
    wanted_docs: dict[DocKey, ArchivedDocument] = {}
    wanted_versions: list[DocumentVersion] = []

    def take_entry(record: EntryRecord) -> None:
        wanted_entries[record.id] = seen(redact_record(record) if redact_entries else record)

    def take_document(document: ArchivedDocument) -> None:
        document = _redact_archived(document)
        wanted_docs[(document.slot, document.name)] = document

    def take_version(version: DocumentVersion) -> None:
        wanted_versions.append(redact_version(version))

    report = RestoreReport(
        verify_archive(path, on_entry=take_entry, on_document=take_document, on_version=take_version)
    )
    report.scope = _archive_scope(report.manifest, wanted_docs)
    if scope and report.scope and scope != report.scope:
        wanted_docs = _rehomed(wanted_docs, report.scope, scope)
        wanted_versions = [_rehomed_version(v, report.scope, scope) for v in wanted_versions]
    report.scope = scope or report.scope
    found_entries = await _entries_seen(entries)
    entry_diff = _compare(wanted_entries, found_entries, exact=True)
    report.entries_state = _state(entry_diff, len(found_entries))
    found_docs = await _target_documents(knowledge)
    doc_diff = _doc_mismatches(wanted_docs, found_docs, exact=True)
    report.knowledge_state = _state(doc_diff, len(found_docs))
    if mode == "refuse":
        if report.entries_state == "different":
            raise _refuse("entry", entries.url, entry_diff)
        if report.knowledge_state == "different":
            raise _refuse("knowledge", knowledge.url, doc_diff)

    shared: dict[str, Seen] = {}
    if report.entries_state != "identical":
        stale = [i for i in found_entries if i not in wanted_entries] if mode == "replace" else []
        if mode == "merge":
            shared = {i: s for i, s in found_entries.items() if i in wanted_entries}
        report.entries_written, report.entries_removed, report.entries_revised = await _write_entries(
            entries, path, stale, shared, len(wanted_entries), progress, redact_entries
        )
    if report.knowledge_state != "identical":
        report.documents_written, report.documents_removed = await _write_documents(
            knowledge, report.manifest, wanted_docs, found_docs, mode, progress
        )
    if wanted_versions and isinstance(knowledge, VersionedKnowledgeStore):
        report.histories_restored, report.histories_kept = await knowledge.log.adopt(
            wanted_versions, current_cause().operation_id
        )

    progress("comparing", 0, None)
    exact = mode != "merge"
    report.mismatched_entries = _compare(
        wanted_entries, await _entries_seen(entries), exact=exact, revised=frozenset(shared)
    )
    report.mismatched_documents = _doc_mismatches(
        wanted_docs, await _target_documents(knowledge), exact=exact
    )
    return report
