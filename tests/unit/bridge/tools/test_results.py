"""Result models serialise exactly the keys they were built with, in declaration order."""

from __future__ import annotations

import pydantic_core

from memory_bridge.tools._results import AbsorbResult, AuditResult, SetResult


def test_an_absent_key_stays_absent_and_a_null_one_stays_null() -> None:
    written = SetResult.model_validate(
        {"ok": True, "id": "a", "operation": "created", "revision": 1, "warning": None}
    )
    assert written.model_dump(mode="json") == {
        "ok": True,
        "id": "a",
        "operation": "created",
        "revision": 1,
        "warning": None,
    }
    conflict = {"ok": False, "error": "conflict", "id": "a", "current_revision": 2, "expected_version": 0}
    assert pydantic_core.to_json(SetResult.model_validate(conflict)).decode() == (
        '{"ok":false,"error":"conflict","id":"a","current_revision":2,"expected_version":0}'
    )


def test_per_item_shapes_and_aliases_survive() -> None:
    absorbed = {
        "datasetId": "d",
        "datasetSlot": "knowledge",
        "total": 2,
        "succeeded": 1,
        "failed": 1,
        "results": [
            {"file": "x", "ok": False, "error": None},
            {"file": "README.md", "ok": True, "dryRun": True, "docName": "README.md", "size": 3},
        ],
    }
    assert AbsorbResult.model_validate(absorbed).model_dump(mode="json") == absorbed
    finding = {
        "class": "stale-plans",
        "slot": "plans",
        "documentId": "1",
        "name": "plan-a.md",
        "reason": "r",
        "suggested_action": "delete",
    }
    audit = {
        "ok": True,
        "findings": [finding],
        "summary": {
            "totalFindings": 1,
            "byClass": {"stale-plans": 1},
            "bySlot": {"plans": 1},
            "staleLoreDaysUsed": 90,
        },
        "errors": [],
    }
    assert (
        pydantic_core.to_json(AuditResult.model_validate(audit)).decode()
        == pydantic_core.to_json(audit).decode()
    )
