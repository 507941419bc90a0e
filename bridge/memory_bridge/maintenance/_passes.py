"""The maintenance passes that need no LLM, on this project's documents of each refine slot.

Local Dify MCP Memory's consolidate (its spec, section 11.2), in order:

- **dedupe-by-sha256**: of the active documents with one body (sha256 of the text,
  stripped), the newest is kept; each other one is archived like a lesson-key loser.
- **dedupe-by-lesson-key**: of the active lessons sharing a lesson key, the newest is kept;
  each other one is archived: marked `superseded_by` (the keeper's id) and
  `consolidated_at`, and disabled.
- **staleness-flag**: an active lesson, bug-root-cause, feedback-rule or pattern-gotcha
  neither recalled, created nor changed within the window is marked `stale=true`; one
  marked that is no longer stale loses the mark. Written only when it changes.
- **compress-archived**: a disabled document unchanged for `archive_age_days` whose body is
  longer than `archive_body_max` characters, not yet truncated, keeps the first ones and a
  marker line, is marked `consolidate_truncated_at` and stays disabled.

The candidates are consolidate_memory's (`slot_candidates`), computed afresh for each pass.
Before a document is changed its state (text, metadata, origin, enabled, marks) is kept in
the changes returned, which `undo_changes` writes back exactly. A dry run changes nothing
and reports the same actions.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import StoreError
from ..core._audit import project_documents
from ..core._redact import redact
from ..core._redact_fields import redact_metadata
from ..core._results import Refusal
from ..stores._knowledge import MARK_FIELDS, DocMetadata, Document, KnowledgeStore
from ._consolidate import is_stale, refine_slots, slot_candidates

__all__ = ["ARCHIVE_BODY_MAX", "NO_LLM_PASSES", "PassReport", "run_passes", "undo_changes"]

NO_LLM_PASSES = ("dedupe-by-sha256", "dedupe-by-lesson-key", "staleness-flag", "compress-archived")
ARCHIVE_BODY_MAX = 1200


def _instant(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@dataclass
class PassReport:
    """What one pass did (or, in a dry run, would do): one action per document touched."""

    name: str
    actions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # slots the pass cannot work on, and why

    @property
    def detail(self) -> str:
        counts: dict[str, int] = {}
        for action in self.actions:
            counts[action["action"]] = counts.get(action["action"], 0) + 1
        done = ", ".join(f"{n} {a}" for a, n in sorted(counts.items())) or "nothing to do"
        errors = len(self.errors)
        done += f"; {errors} error{'s' if errors != 1 else ''}" if errors else ""
        return done + "".join(f"; skipped {reason}" for reason in self.skipped)


class SlotSkipped(Exception):
    """A slot a pass cannot work on; the message says why (a skip, not an error)."""


Actions = list[dict[str, Any]]  # what a pass did to a slot's documents, one per document
SlotWork = Callable[[str, list[Document], Actions], Awaitable[None]]


async def each_refine_slot(
    store: KnowledgeStore,
    slots: tuple[Sequence[str], Sequence[Refusal]],
    report: PassReport,
    scope: str,
    work: SlotWork,
    *,
    failures: tuple[type[Exception], ...] = (StoreError,),
) -> None:
    """Run `work` on each refine slot's project documents; the actions it appends (even
    when it fails part-way) go into `report`, tagged with the slot. `slots` is what
    `refine_slots` answered (slots, refusals): policy refusals are the report's errors and
    no slot runs. A SlotSkipped is a skip; an exception of `failures` is an error of its
    slot, and the other slots still run."""
    refine, refusals = slots
    report.errors += [r.message for r in refusals]
    for slot in [] if refusals else refine:
        actions: Actions = []
        try:
            await work(slot, await project_documents(store, slot, scope), actions)
        except SlotSkipped as exc:
            report.skipped.append(str(exc))
        except failures as exc:
            report.errors.append(f"{slot}: {exc}")
        report.actions += [{"slot": slot, **a} for a in actions]


def _before(doc: Document) -> dict[str, Any]:
    return {
        "slot": doc.slot,
        "documentId": doc.id,
        "name": doc.name,
        "text": doc.text,
        "metadata": doc.metadata.to_dict(),
        "origin": doc.origin,
        "enabled": doc.enabled,
        "marks": dict(doc.marks),
    }


@dataclass
class _Run:
    store: KnowledgeStore
    dry_run: bool
    now: float
    changes: list[dict[str, Any]]

    async def change(
        self,
        doc: Document,
        marks: Mapping[str, str],
        *,
        text: str | None = None,
        enabled: bool | None = None,
    ) -> None:
        if self.dry_run:
            return
        self.changes.append(_before(doc))
        if text is not None:
            await _rewrite(self.store, doc, text, doc.metadata, doc.origin)
        if enabled is not None or text is not None:
            await self.store.set_enabled(doc.slot, doc.id, doc.enabled if enabled is None else enabled)
        await self.store.set_marks(doc.slot, doc.id, marks)


async def _rewrite(
    store: KnowledgeStore, doc: Document, text: str, metadata: DocMetadata, origin: str
) -> None:
    """A document's text in place, redacted like every write; Dify takes no text for a
    disabled document, so it is enabled for the write (its enabled state is the caller's
    to set after)."""
    if not doc.enabled:
        await store.set_enabled(doc.slot, doc.id, True)
    await store.upsert(doc.slot, doc.name, redact(text), redact_metadata(metadata), origin=origin)


def _truncated(text: str, limit: int, now: float) -> str:
    dropped = len(text) - limit
    marker = f"[truncated by memctl maintain at {_instant(now)}: {dropped} characters dropped]"
    return f"{text[:limit]}\n\n{marker}"


async def _pass(
    run: _Run,
    name: str,
    docs: list[Document],
    *,
    stale_after_months: float,
    archive_age_days: float,
    archive_body_max: int,
) -> list[dict[str, Any]]:
    found = slot_candidates(docs, run.now, stale_after_months, archive_age_days)
    actions: list[dict[str, Any]] = []
    if name in ("dedupe-by-sha256", "dedupe-by-lesson-key"):
        sha = name == "dedupe-by-sha256"
        for key, keeper, loser in found.identical if sha else found.duplicates:
            marks = {"superseded_by": keeper.id, "consolidated_at": _instant(run.now)}
            await run.change(loser, marks, enabled=False)
            actions.append(
                {"action": "archived", "documentId": loser.id, "name": loser.name}
                | {"sha256" if sha else "lessonKey": key, "keeper": keeper.id, "keeperName": keeper.name}
            )
    elif name == "staleness-flag":
        for doc in found.active:
            stale, flagged = is_stale(doc, run.now, stale_after_months), doc.marks.get("stale") == "true"
            if stale != flagged:
                await run.change(doc, {"stale": "true" if stale else ""})
                action = "flagged" if stale else "unflagged"
                actions.append({"action": action, "documentId": doc.id, "name": doc.name})
    else:
        for doc in found.archived:
            if len(doc.text) <= archive_body_max or doc.marks.get("consolidate_truncated_at"):
                continue
            text = _truncated(doc.text, archive_body_max, run.now)
            await run.change(doc, {"consolidate_truncated_at": _instant(run.now)}, text=text, enabled=False)
            freed = len(doc.text.encode()) - len(text.encode())
            actions.append(
                {"action": "truncated", "documentId": doc.id, "name": doc.name, "freedBytes": freed}
            )
    return actions


async def run_passes(
    store: KnowledgeStore,
    passes: Sequence[str],
    *,
    scope: str,
    policies: Mapping[str, str],
    stale_after_months: float,
    archive_age_days: float,
    archive_body_max: int = ARCHIVE_BODY_MAX,
    now: float,
    dry_run: bool,
    changes: list[dict[str, Any]],
) -> list[PassReport]:
    """Run `passes` (of NO_LLM_PASSES, in their order) on every refine slot; a report per
    pass. Unless `dry_run`, each document's state before it changes is appended to
    `changes` first (so an interrupted run still says what it changed). Policy refusals
    make every pass fail with them and change nothing."""
    _, refine, refusals = await refine_slots(store, None, policies)
    run = _Run(store, dry_run, now, changes)
    reports = []
    for name in [p for p in NO_LLM_PASSES if p in passes]:

        async def work(slot: str, docs: list[Document], actions: Actions, name: str = name) -> None:
            actions += await _pass(
                run,
                name,
                docs,
                stale_after_months=stale_after_months,
                archive_age_days=archive_age_days,
                archive_body_max=archive_body_max,
            )

        reports.append(report := PassReport(name))
        await each_refine_slot(store, (refine, refusals), report, scope, work)
    return reports


async def undo_changes(store: KnowledgeStore, changes: Sequence[Mapping[str, Any]]) -> int:
    """Write back each document's state before a run (newest change first); how many
    documents were restored (one no longer there is skipped)."""
    restored = 0
    for before in reversed(changes):
        slot, doc_id = str(before["slot"]), str(before["documentId"])
        current = await store.get(slot, doc_id)
        if current is None:
            continue
        meta = dict(before["metadata"])
        metadata = DocMetadata(**{**meta, "tags": tuple(meta.get("tags", ()))})
        if current.text != before["text"] or current.metadata != metadata:
            await _rewrite(store, current, str(before["text"]), metadata, str(before["origin"]))
        marks = {name: str(before["marks"].get(name, "")) for name in MARK_FIELDS}
        await store.set_marks(slot, doc_id, marks)
        await store.set_enabled(slot, doc_id, bool(before["enabled"]))
        restored += 1
    return restored
