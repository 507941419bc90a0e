"""Result models serialise exactly the keys they were built with, in declaration order."""

from __future__ import annotations

import pydantic_core

from memory_bridge.core._results import AbsorbResult, AuditResult, HistoryResult, SearchResult, SetResult


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


def test_a_result_with_every_key_and_extra_keys_keeps_them_all_in_order() -> None:
    entry = {
        "id": "a",
        "title": "t",
        "body": "b",
        "type": "note",
        "tags": ["x"],
        "source": "s",
        "project": "",
        "created": "c",
        "updated": "u",
        "hits": 0,
        "ttl": "",
    }
    found = {"count": 1, "results": [entry], "total": 1, "next_cursor": None, "match": "all"}
    dumped = SearchResult.model_validate(found).model_dump(mode="json")
    assert dumped == found
    assert list(dumped) == list(found) and list(dumped["results"][0]) == list(entry)
    versions = [{"index": 0, "title": "t", "rev": 3}, {"index": 1, "raw": "?"}]
    history = {"id": "a", "count": 2, "versions": versions}
    assert HistoryResult.model_validate(history).model_dump(mode="json") == history
