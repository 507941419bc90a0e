"""audit_memory: four classes of documents a person may want to retire. Never mutates.

Rules as in Local Dify MCP Memory, scoped consistently: only this project's documents
are audited, and duplicate lessons are grouped by (project_module, error_pattern),
not by error_pattern alone.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from .._errors import InvalidInput
from ..stores._knowledge import Document, KnowledgeStore
from ._results import AuditResult, AuditSummary, Finding

__all__ = ["AUDIT_CLASSES", "audit_memory", "project_documents", "retire"]

AUDIT_CLASSES = ("stale-plans", "missing-metadata", "stale-project-lore", "duplicate-error-pattern")
_SLOTS = {
    "stale-plans": ("plans",),
    "missing-metadata": ("knowledge", "self_improvement"),
    "stale-project-lore": ("knowledge",),
    "duplicate-error-pattern": ("self_improvement",),
}
_REQUIRED = {
    "self-improvement-lesson": ("project_module", "task_type", "error_pattern"),
    "bug-root-cause": ("project_module",),
}
_PAGE = 500


def _finding(cls: str, doc: Document, reason: str, action: Literal["disable", "delete"]) -> Finding:
    return Finding(  # `class` is a keyword: given by its key
        **{"class": cls},
        slot=doc.slot,
        documentId=doc.id,
        name=doc.name,
        reason=reason,
        suggested_action=action,
    )


def _stale_plans(docs: list[Document]) -> list[Finding]:
    plans = sorted(
        (d for d in docs if d.name.startswith("plan-") and d.name.endswith(".md")), key=lambda d: d.created_at
    )
    findings: list[Finding] = []
    for i, older in enumerate(plans):
        slug = older.name[len("plan-") : -len(".md")]
        for newer in plans[i + 1 :]:
            other = newer.name[len("plan-") : -len(".md")]
            if other != slug and other.startswith(slug + "-"):
                findings.append(
                    _finding("stale-plans", older, f"superseded by newer plan {newer.name!r}", "delete")
                )
                break
    return findings


def _missing_metadata(docs: list[Document]) -> list[Finding]:
    findings: list[Finding] = []
    for doc in docs:
        required = _REQUIRED.get(doc.metadata.atom_type, ())
        missing = [f for f in required if not str(getattr(doc.metadata, f)).strip()]
        if missing:
            reason = f"atom_type={doc.metadata.atom_type!r} missing required metadata: {', '.join(missing)}"
            findings.append(_finding("missing-metadata", doc, reason, "disable"))
    return findings


def _stale_lore(docs: list[Document], days: int, now: float) -> list[Finding]:
    findings: list[Finding] = []
    for doc in docs:
        age = (now - doc.created_at) / 86_400
        if doc.metadata.atom_type == "project-lore" and doc.created_at and age >= days:
            findings.append(
                _finding("stale-project-lore", doc, f"project-lore is {int(age)} days old", "disable")
            )
    return findings


def _duplicate_lessons(docs: list[Document]) -> list[Finding]:
    groups: dict[tuple[str, str], list[Document]] = defaultdict(list)
    for doc in docs:
        pattern = doc.metadata.error_pattern.strip()
        if doc.metadata.atom_type == "self-improvement-lesson" and pattern:
            groups[(doc.metadata.project_module, pattern)].append(doc)
    findings: list[Finding] = []
    for (_, pattern), members in groups.items():
        if len(members) < 2:
            continue
        members.sort(key=lambda d: d.created_at, reverse=True)
        canonical = members[0]
        for doc in members[1:]:
            reason = (
                f"lesson shares error_pattern={pattern!r} with newer canonical {canonical.name!r} "
                f"(id={canonical.id})"
            )
            findings.append(_finding("duplicate-error-pattern", doc, reason, "delete"))
    return findings


async def project_documents(store: KnowledgeStore, slot: str, scope: str) -> list[Document]:
    """Every document of `slot` that project `scope` wrote."""
    docs: list[Document] = []
    offset = 0
    while True:
        page, total = await store.list_documents(slot, offset=offset, limit=_PAGE)
        docs += [d for d in page if d.metadata.scope == scope]
        offset += len(page)
        if not page or offset >= total:
            return docs


async def audit_memory(
    store: KnowledgeStore, *, scope: str, classes: Sequence[str] | None, stale_lore_days: int
) -> AuditResult:
    wanted = list(classes or AUDIT_CLASSES)
    unknown = [c for c in wanted if c not in AUDIT_CLASSES]
    if unknown:
        raise InvalidInput(
            "classes", f"unknown class(es) {', '.join(unknown)}; choose from {', '.join(AUDIT_CLASSES)}"
        )
    existing = set(await store.slot_ids())
    slots = sorted({slot for cls in wanted for slot in _SLOTS[cls] if slot in existing})
    docs = {slot: await project_documents(store, slot, scope) for slot in slots}
    now = time.time()
    findings: list[Finding] = []
    if "stale-plans" in wanted:
        findings += _stale_plans(docs.get("plans", []))
    if "missing-metadata" in wanted:
        findings += _missing_metadata(docs.get("knowledge", []) + docs.get("self_improvement", []))
    if "stale-project-lore" in wanted:
        findings += _stale_lore(docs.get("knowledge", []), stale_lore_days, now)
    if "duplicate-error-pattern" in wanted:
        findings += _duplicate_lessons(docs.get("self_improvement", []))
    by_class: dict[str, int] = defaultdict(int)
    by_slot: dict[str, int] = defaultdict(int)
    for finding in findings:
        by_class[finding.class_] += 1
        by_slot[finding.slot] += 1
    summary = AuditSummary(
        totalFindings=len(findings),
        byClass=dict(by_class),
        bySlot=dict(by_slot),
        staleLoreDaysUsed=stale_lore_days,
    )
    return AuditResult(ok=True, findings=findings, summary=summary, errors=[])


async def retire(store: KnowledgeStore, finding: Finding) -> bool:
    """Carry out a finding's suggested action (disable or delete); False when there was
    nothing to do (the document is gone, or already disabled)."""
    slot, document_id = finding.slot, finding.documentId
    if finding.suggested_action == "delete":
        return await store.delete(slot, document_id)
    current = await store.get(slot, document_id)
    if current is None or not current.enabled:
        return False
    return await store.set_enabled(slot, document_id, False)
