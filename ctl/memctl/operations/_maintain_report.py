"""What a maintenance run did to each item, in words: one change per document or entry.

The passes report actions in their own terms (`archived` with a keeper id, `flagged`,
`truncated` with the bytes freed, `backlinks` with the referring entries ...); this turns
each into the item's short reference, the change made (or, in a dry run, that would be
made) and what it was made against, and counts the changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from .._refs import document_ref, entry_ref

__all__ = ["change_counts", "item_changes"]

_CHANGES: dict[tuple[str, str], str] = {
    ("dedupe-by-sha256", "archived"): "archived (same text as {keeper})",
    ("dedupe-by-lesson-key", "archived"): "archived (same lesson key as {keeper})",
    ("dedupe-by-similarity", "flagged"): "listed as a near-duplicate of {keeper} ({score}), not changed",
    ("llm-merge-near-duplicates", "merged"): "merged into {keeper} ({score}): {reason}",
    ("llm-merge-near-duplicates", "kept"): "kept beside {keeper} ({score}): {reason}",
    ("llm-merge-near-duplicates", "asked"): "would ask the LLM whether to merge it into {keeper}",
    ("staleness-flag", "flagged"): "flagged stale",
    ("staleness-flag", "unflagged"): "stale flag cleared",
    ("llm-semantic-refresh", "rewritten"): "rewritten by the LLM: {reason}",
    ("llm-semantic-refresh", "archived"): "archived by the LLM: {reason}",
    ("llm-semantic-refresh", "kept"): "kept by the LLM: {reason}",
    ("llm-semantic-refresh", "asked"): "would ask the LLM whether it is still true",
    ("compress-archived", "truncated"): "truncated ({freed} bytes freed)",
    ("thin-versions", "thinned"): "{count} old version(s) thinned (the last of each day kept)",
    ("compact-entries", "backlinks"): "Referenced by block written ({referrers})",
    ("compact-entries", "stub"): "stub created for the entries naming it ({referrers})",
}


def _ref(action: Mapping[str, Any]) -> str:
    if "slot" in action and "name" in action:
        return document_ref(str(action["slot"]), str(action["name"]))
    return entry_ref(str(action.get("id", "?")))


def _words(step: str, action: Mapping[str, Any]) -> str:
    template = _CHANGES.get((step, str(action["action"])), str(action["action"]))
    slot = str(action.get("slot", ""))
    keeper = str(action.get("keeperName") or action.get("keeper") or "?")
    referrers = [entry_ref(str(r)) for r in action.get("referencedBy", [])]
    return template.format(
        keeper=document_ref(slot, keeper) if slot else keeper,
        score=f"similarity {action['score']}" if "score" in action else "",
        reason=action.get("reason") or "no reason given",
        freed=action.get("freedBytes", "?"),
        count=action.get("count", "?"),
        referrers=", ".join(referrers) or "none",
    )


def item_changes(actions: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One object per item each step acted on, in the order of the run: `step`, `ref` (the
    item's short reference), `id` (its full id), `action` (the pass's word for it) and
    `change` (what happened to it, in words)."""
    return [
        {
            "step": step,
            "ref": _ref(action),
            "id": str(action.get("documentId") or action.get("id") or ""),
            "action": str(action["action"]),
            "change": _words(step, action),
        }
        for step, done in actions.items()
        for action in done
    ]


def change_counts(changes: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per step, how many items got each action."""
    counts: dict[str, Counter[str]] = {}
    for change in changes:
        counts.setdefault(change["step"], Counter())[change["action"]] += 1
    return {step: dict(sorted(c.items())) for step, c in counts.items()}
