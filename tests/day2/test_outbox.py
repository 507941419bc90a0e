"""`memctl outbox` and `memctl status` on a Dify project whose outbox holds a dead write (issue 14)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from memory_bridge.stores.dify import Outbox
from memory_bridge.stores.dify._outbox import MAX_REJECTIONS

from .conftest import Dify, configure, memctl

pytestmark = pytest.mark.integration


def dead_letter(project: Path) -> int:
    """Queue one write and have Dify refuse it until it is dead-lettered; returns its seq."""

    async def run() -> int:
        box = Outbox(project / ".memory" / "dify-outbox.db")
        payload = {"slot": "knowledge", "name": "x.md", "text": "t", "metadata": {}, "origin": "t"}
        seq = await box.append("upsert", payload)
        for _ in range(MAX_REJECTIONS):
            await box.reject(seq, "write metadata: Dify answered 500: boom")
        box.close()
        return seq

    return anyio.run(run)


def test_status_fails_while_a_write_is_dead_and_outbox_acts_on_it(tmp_path: Path, dify: Dify) -> None:
    project = configure(
        tmp_path / "p", knowledge_store=dify.url, dify_api_key_file=str(dify.key_file), embedding_model="none"
    )
    seq = dead_letter(project)
    status = memctl("status", "--project", str(project), "--json")
    assert status.code == 5
    assert status.json["outbox"]["dead_lettered"] == 1
    assert "500: boom" in status.json["outbox"]["last_error"]
    listed = memctl("outbox", "list", "--project", str(project), "--json")
    [entry] = listed.json["entries"]
    assert (entry["seq"], entry["document"], entry["dead_lettered"]) == (seq, "knowledge/x.md", True)
    assert "text" not in entry, "a listing never prints the document"
    assert memctl("outbox", "retry", "--project", str(project), "--json").json["retried"] == 1
    assert memctl("status", "--project", str(project), "--json").code == 0
    assert memctl("outbox", "drop", str(seq), "--project", str(project), "--json").json["dropped"] == 1
    assert memctl("outbox", "list", "--project", str(project), "--json").json["entries"] == []


def test_outbox_of_a_project_without_one_is_not_found(tmp_path: Path) -> None:
    project = configure(tmp_path / "p", embedding_model="none")
    assert memctl("outbox", "list", "--project", str(project)).code == 3
