"""`memctl outbox` and `memctl status` on a Dify project whose outbox holds a dead write (issue 14)
or a status change Dify refuses while it marks the document as being indexed (issue 37)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from memory_bridge import build_server, load_settings, open_state
from memory_bridge.stores.dify import MAX_REJECTIONS, Outbox
from memory_bridge.stores.dify import _outbox as outbox_module

from .conftest import Dify, Run, configure, memctl

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


@pytest.mark.anyio
async def test_an_enable_refused_as_being_indexed_waits_in_the_outbox(
    tmp_path: Path, dify: Dify, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37: Dify's "being indexed" flag can outlive a disable's re-index by ten minutes.
    The enable answers at once that it is queued and why, `memctl outbox` shows it, other
    writes go on, and it is applied once Dify accepts it."""
    emulated = dify.app.state.dify
    emulated.stale_status_flag = 600
    project = configure(
        tmp_path / "p", knowledge_store=dify.url, dify_api_key_file=str(dify.key_file), embedding_model="none"
    )
    async with (
        open_state(load_settings(project=project), background=False) as state,
        Client(build_server(state)) as client,
    ):
        saved = await call(client, "save_to_dataset", dataset="knowledge", name="f.md", text="Flags.")
        doc = {"dataset": "knowledge", "documentId": saved["documentId"]}
        emulated.finish_indexing()
        assert (await call(client, "disable_document", **doc))["queued"] is False
        emulated.finish_indexing()  # the index task ran; the flag stays
        monkeypatch.setattr(outbox_module, "BUSY_RETRY_SECONDS", 0.0)  # each upkeep asks Dify again

        enabled = await call(client, "enable_document", **doc)
        assert (enabled["result"], enabled["queued"]) == ("enabled", True)
        assert "being indexed" in enabled["reason"]
        [entry] = (await outbox_list(project)).json["entries"]
        assert (entry["operation"], entry["dead_lettered"]) == ("enable", False)
        assert "being indexed" in entry["last_error"]
        other = await call(client, "save_to_dataset", dataset="knowledge", name="g.md", text="Other.")
        assert other["ok"] and other["indexingStatus"] != "queued", "other writes are not held up"

        for _ in range(MAX_REJECTIONS):  # still refused: it waits, never dead-lettered
            await state.knowledge.upkeep()
        assert await enabled_now(state.knowledge, saved["documentId"]) is False
        emulated.advance(601)  # the flag expires
        assert await state.knowledge.upkeep() >= 1
        assert await enabled_now(state.knowledge, saved["documentId"]) is True
        assert (await outbox_list(project)).json["entries"] == []


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return dict(json.loads(result.content[0].text))


async def enabled_now(knowledge: Any, document_id: str) -> bool:
    doc = await knowledge.get("knowledge", document_id)
    assert doc is not None
    return bool(doc.enabled)


async def outbox_list(project: Path) -> Run:
    """`memctl outbox list --json` (in a thread: the command runs an event loop of its own)."""
    return await anyio.to_thread.run_sync(
        lambda: memctl("outbox", "list", "--project", str(project), "--json")
    )
