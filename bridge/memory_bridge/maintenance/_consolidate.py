"""consolidate_memory: what a maintenance run would act on, per slot. Never mutates.

Local Dify MCP Memory's projection (its spec, sections 4.14 and 11.1) on this project's
documents: each slot has a policy, `refine` (maintained) or `none` (left alone); built-in
defaults cover the standard slots and any other slot must be declared, else the whole
projection is refused, as is a policy other than `refine` or `none`. For each refine slot:
the working set (enabled documents), the disabled count, lessons sharing a lesson key,
stale documents and archived documents old enough to compress.
"""

from __future__ import annotations

import calendar
import hashlib
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .._errors import StoreError
from ..core._audit import project_documents
from ..core._freshness import MONTH_DAYS, STALE_TYPES
from ..core._knowledge import resolve_slot
from ..core._results import (
    ConsolidateCandidates,
    ConsolidateResult,
    DocRef,
    DuplicatePair,
    Refusal,
    SlotProjection,
    StaleCandidate,
)
from ..stores._knowledge import Document, KnowledgeStore

__all__ = [
    "DEFAULT_POLICIES",
    "POLICIES",
    "Candidates",
    "consolidate_memory",
    "is_stale",
    "refine_slots",
    "slot_candidates",
]

POLICIES = ("refine", "none")
DEFAULT_POLICIES = {
    "knowledge": "refine",
    "self_improvement": "refine",
    "plans": "none",
    "investigations": "none",
    "daily": "none",
}
_LESSON = "self-improvement-lesson"
_DAY = 86_400.0
_SHOWN = 50  # candidates listed per kind and slot (the counts are complete)


def _policies(slots: Sequence[str], declared: Mapping[str, str]) -> tuple[dict[str, str], list[Refusal]]:
    """Each slot's policy, and the refusals: a policy that is not refine or none, a slot
    with neither a declared nor a built-in policy."""
    merged = {**DEFAULT_POLICIES, **declared}
    refusals = [
        Refusal(
            code="policy-invalid",
            slot=slot,
            message=f"consolidate policy {value!r} of slot {slot!r} is not one of {', '.join(POLICIES)}",
        )
        for slot, value in sorted(declared.items())
        if value not in POLICIES
    ]
    refusals += [
        Refusal(
            code="policy-undeclared-slot",
            slot=slot,
            message=f"slot {slot!r} has no consolidate policy: declare it as refine or none "
            f'(setting consolidate_policies, e.g. MEMCTL_CONSOLIDATE_POLICIES=\'{{"{slot}": "none"}}\')',
        )
        for slot in slots
        if slot not in merged
    ]
    return {slot: merged[slot] for slot in slots if slot in merged}, refusals


def _lesson_key(doc: Document) -> str | None:
    meta = doc.metadata
    parts = [
        meta.project_module.strip().lower(),
        meta.task_type.strip().lower(),
        meta.error_pattern.strip().lower(),
    ]
    return "|".join(parts) if meta.atom_type == _LESSON and all(parts) else None


def _brief(doc: Document) -> DocRef:
    return DocRef(documentId=doc.id, name=doc.name)


@dataclass(frozen=True)
class Candidates:
    """What maintenance would act on in one slot, complete: active documents with one body
    and lesson-key duplicates, each as (sha256 or key, keeper, loser), stale active
    documents, and long-archived (disabled) ones."""

    active: list[Document]
    identical: list[tuple[str, Document, Document]]
    duplicates: list[tuple[str, Document, Document]]
    stale: list[Document]
    archived: list[Document]


def _pairs(groups: dict[str, list[Document]]) -> list[tuple[str, Document, Document]]:
    """One pair per loser: the keeper is the newest (then the smaller id) of its group."""
    pairs = []
    for key, members in sorted(groups.items()):
        members.sort(key=lambda d: (-d.created_at, d.id))
        pairs += [(key, members[0], loser) for loser in members[1:]]
    return pairs


def _duplicates(active: list[Document]) -> list[tuple[str, Document, Document]]:
    groups: dict[str, list[Document]] = defaultdict(list)
    for doc in active:
        key = _lesson_key(doc)
        if key is not None:
            groups[key].append(doc)
    return _pairs(groups)


def _identical(active: list[Document]) -> list[tuple[str, Document, Document]]:
    groups: dict[str, list[Document]] = defaultdict(list)
    for doc in active:
        groups[hashlib.sha256(doc.text.strip().encode()).hexdigest()].append(doc)
    return _pairs(groups)


def _last_active(doc: Document) -> float:
    """Its last creation, change, recall or refresh (an LLM judged it current: `last_refreshed_at`)."""
    refreshed = doc.marks.get("last_refreshed_at", "")
    try:
        refreshed_at = calendar.timegm(time.strptime(refreshed, "%Y-%m-%dT%H:%M:%SZ")) if refreshed else 0.0
    except ValueError:  # a mark written by hand
        refreshed_at = 0.0
    return max(doc.created_at, doc.updated_at, doc.last_recalled_at or 0.0, refreshed_at)


def is_stale(doc: Document, now: float, stale_after_months: float) -> bool:
    """A lesson, bug-root-cause, feedback-rule or pattern-gotcha neither recalled, created
    nor changed within `stale_after_months` (search's age penalty uses the same rule)."""
    stale_before = now - stale_after_months * MONTH_DAYS * _DAY
    return doc.metadata.atom_type in STALE_TYPES and _last_active(doc) < stale_before


def slot_candidates(
    docs: Sequence[Document], now: float, stale_after_months: float, archive_age_days: float
) -> Candidates:
    """The candidates among one slot's documents at `now`."""
    active = [d for d in docs if d.enabled]
    return Candidates(
        active=active,
        identical=_identical(active),
        duplicates=_duplicates(active),
        stale=sorted((d for d in active if is_stale(d, now, stale_after_months)), key=_last_active),
        archived=sorted(
            (d for d in docs if not d.enabled and d.updated_at < now - archive_age_days * _DAY),
            key=lambda d: d.updated_at,
        ),
    )


def _project(
    docs: list[Document], now: float, stale_after_months: float, archive_age_days: float
) -> SlotProjection:
    found = slot_candidates(docs, now, stale_after_months, archive_age_days)
    candidates = ConsolidateCandidates(
        lessonKeyDuplicates=[
            DuplicatePair(lessonKey=key, keeper=_brief(keeper), loser=_brief(loser))
            for key, keeper, loser in found.duplicates[:_SHOWN]
        ],
        stale=[
            StaleCandidate(
                documentId=d.id, name=d.name, atomType=d.metadata.atom_type, recallCount=d.recall_count
            )
            for d in found.stale[:_SHOWN]
        ],
        compressArchived=[_brief(d) for d in found.archived[:_SHOWN]],
    )
    return SlotProjection(
        workingSetSize=len(found.active),
        disabledCount=len(docs) - len(found.active),
        lessonKeyDuplicateCandidates=len(found.duplicates),
        staleCandidates=len(found.stale),
        compressArchivedCandidatesApprox=len(found.archived),
        candidates=candidates,
    )


async def refine_slots(
    store: KnowledgeStore, slots: Sequence[str] | None, policies: Mapping[str, str]
) -> tuple[dict[str, str], list[str], list[Refusal]]:
    """Each slot's policy, the refine slots (narrowed to `slots`, each of which must
    exist) and the refusals; while there is a refusal, no slot may be maintained."""
    existing = list(await store.slot_ids())
    if slots is not None:
        slots = [await resolve_slot(store, slot) for slot in slots]
    resolved, refusals = _policies(existing, policies)
    refine = [
        slot for slot in existing if resolved.get(slot) == "refine" and (slots is None or slot in slots)
    ]
    return resolved, refine, refusals


async def consolidate_memory(
    store: KnowledgeStore,
    *,
    scope: str,
    slots: Sequence[str] | None,
    policies: Mapping[str, str],
    stale_after_months: float,
    archive_age_days: float,
    now: float,
) -> ConsolidateResult:
    """The read-only projection for this project's documents (scope `scope`); `slots`
    narrows the refine slots projected (each must exist)."""
    resolved, refine, refusals = await refine_slots(store, slots, policies)
    projected = [] if refusals else refine
    per_slot: dict[str, SlotProjection] = {}
    errors: list[dict[str, str]] = []
    for slot in projected:
        try:
            docs = await project_documents(store, slot, scope)
        except StoreError as exc:  # one slot's failure is reported, the others answer
            errors.append({"slot": slot, "error": str(exc)})
            continue
        per_slot[slot] = _project(docs, now, stale_after_months, archive_age_days)
    note = (
        "read-only: nothing was changed. "
        f"Stale: {', '.join(STALE_TYPES)} neither recalled, created nor updated in {stale_after_months:g} "
        f"month(s); archived: disabled and unchanged for {archive_age_days:g} day(s). "
        f"At most {_SHOWN} candidates of each kind are listed per slot; the counts are complete."
    )
    if refusals:
        note = "refused: no slot was projected until every slot has a valid policy. " + note
    return ConsolidateResult(
        ok=not refusals and not errors,
        readOnly=True,
        policies=resolved,
        refine=refine,
        refusals=refusals,
        slotsProjected=[slot for slot in projected if slot in per_slot],
        perSlot=per_slot,
        errors=errors,
        note=note,
    )
