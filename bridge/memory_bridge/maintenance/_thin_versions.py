"""The maintenance pass that thins old document versions, so a document's history stays
bounded while every day keeps its last version."""

from __future__ import annotations

from ..core._document_history import versioned
from ..stores._knowledge import KnowledgeStore
from ._passes import PassReport

__all__ = ["THIN_PASS", "thin_versions"]

THIN_PASS = "thin-versions"


async def thin_versions(store: KnowledgeStore, *, days: int, now: float, dry_run: bool) -> PassReport:
    """The maintenance pass that thins old versions: of each document's versions older than
    `days` days, the last of each UTC day and every deletion are kept (the newest version
    always); `days` 0 keeps everything."""
    report = PassReport(THIN_PASS)
    if days <= 0:
        report.skipped.append("document_versions_thin_after_days is 0: every version is kept")
        return report
    for slot, name, count in await versioned(store).log.thin(now - days * 86_400, dry_run=dry_run):
        report.actions.append({"action": "thinned", "slot": slot, "name": name, "count": count})
    return report
