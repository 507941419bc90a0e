"""What an MCP client receives does not change by accident: the tools' listing (input and
output schemas included) and the text of a fixed sequence of tool calls are compared with
snapshots, byte for byte after masking what differs from run to run (times, generated ids,
the project's path). A deliberate change rewrites them: MEMCTL_UPDATE_SNAPSHOTS=1 pytest
this file, and review the diff."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memory_bridge import build_server, load_settings, open_state

pytestmark = pytest.mark.anyio

SNAPSHOTS = Path(__file__).parent / "snapshots"
NOTE = {"title": "Retry policy", "body": "Retry idempotent calls.", "type": "pattern", "tags": ["http"]}
LESSON = {"project_module": "billing", "task_type": "bugfix", "error_pattern": "no-retry"}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory_set", {"id": "retry", **NOTE, "operation_id": "op-1"}),
    ("memory_set", {"id": "retry", **NOTE, "operation_id": "op-1"}),  # replayed
    ("memory_set", {"id": "retry", **NOTE, "if_version": 0}),  # conflict
    ("memory_set", {"id": "other", **NOTE, "title": "Deploys", "body": "Deploy on Tuesdays.", "ttl": 3600}),
    ("memory_set", {"id": "bad", "title": "No type"}),  # an error result
    ("memory_get", {"id": "retry"}),
    ("memory_search", {"query": "retry"}),
    ("memory_search", {"query": "nothing like it"}),
    ("memory_list", {"limit": 1}),
    ("memory_history", {"id": "retry"}),
    ("memory_delete", {"id": "retry"}),
    ("memory_rollback", {"id": "retry", "version_index": 1}),
    ("memory_prune_candidates", {"days": 1}),
    ("list_datasets", {}),
    ("create_dataset", {"name": "extra"}),
    ("save_to_dataset", {"dataset": "knowledge", "name": "a.md", "text": "Webhooks retry five times."}),
    ("save_to_dataset", {"dataset": "knowledge", "name": "a.md", "text": "Webhooks retry five times."}),
    ("search_memory", {"query": "webhooks retry"}),
    ("search_memory", {"query": "zebra"}),
    ("search_memory", {"query": "zebra", "bestEffort": True}),
    ("save_lesson", {"title": "Retry", "body": "Retry webhooks.", "metadata": LESSON}),
    ("recall_lessons", {"query": "retry webhooks", "project_module": "billing", "scoreThreshold": 0}),
    ("write_memory", {"name": "w.md", "text": "A document about deploys, long enough."}),
    ("update_memory", {"name": "w2.md", "text": "A newer document about deploys.", "supersedes": "w.md"}),
    ("disable_document", {"dataset": "knowledge", "documentId": "a.md"}),
    ("enable_document", {"dataset": "knowledge", "documentId": "a.md"}),
    ("delete_document", {"dataset": "knowledge", "documentId": "a.md"}),
    ("document_history", {"dataset": "knowledge", "documentId": "a.md"}),
    ("document_rollback", {"dataset": "knowledge", "documentId": "a.md", "version": 1}),
    ("audit_memory", {}),
    ("consolidate_memory", {}),
    ("scan_documents", {}),
    ("absorb_files", {"files": ["README.md", "../outside.md"], "dryRun": True}),
    ("get_memory_config", {}),
    ("cron_health", {"limit": 5}),
]
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
_HEX = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[0-9a-f]{32}\b")


def _masked(text: str, project: Path) -> str:
    text = text.replace(str(project), "<project>")
    text = _HEX.sub("<id>", _TIME.sub("<time>", text))
    return re.sub(r'"(mtime|lastRecalled|last_recalled_at)": "[^"]*"', r'"\1": "<time>"', text)


def _compare(name: str, actual: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("MEMCTL_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(actual)
    assert actual == path.read_text(), f"{name} changed: rerun with MEMCTL_UPDATE_SNAPSHOTS=1 if meant"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "wire").mkdir()
    (tmp_path / "wire" / "README.md").write_text("# Readme\n\nHow to run the service.\n")
    return tmp_path / "wire"


async def test_the_listing_and_the_results_are_what_clients_received_before(project: Path) -> None:
    settings = load_settings(project=project, embedding_model="none", model_cache_dir=project / "cache")
    ids: dict[str, str] = {}  # a document's name, as a documentId argument, stands for its id once saved
    answers: list[str] = []
    async with open_state(settings) as state, Client(build_server(state)) as client:
        listing = [tool.model_dump(mode="json", by_alias=True) for tool in (await client.list_tools()).tools]
        for name, arguments in CALLS:
            filled = {k: ids.get(v, v) if k == "documentId" else v for k, v in arguments.items()}
            result = await client.call_tool(name, filled)
            [content] = result.content
            text = getattr(content, "text", "")
            assert result.is_error or json.loads(text) == result.structured_content, name
            if "documentId" in (result.structured_content or {}) and "name" in arguments:
                ids[arguments["name"]] = result.structured_content["documentId"]
            error = " is_error" if result.is_error else ""
            answers.append(f"{name} {json.dumps(arguments, sort_keys=True)}{error}\n{text}\n")
    _compare("tools_list.json", json.dumps(listing, indent=1, sort_keys=False) + "\n")
    _compare("tool_results.txt", _masked("".join(answers), project))
