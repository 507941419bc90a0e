"""Every tool publishes an output schema, and its results carry structured content that
validates against it and equals the result text, over a real HTTP bridge."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp import Client

from memory_bridge import ENTRY_TOOLS, KNOWLEDGE_TOOLS

from ..bridges import HttpBridge, http_bridge

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

NOTE = {"title": "Retry policy", "body": "Retry idempotent calls.", "type": "pattern", "tags": ["http"]}
LESSON = {"project_module": "billing", "task_type": "bugfix", "error_pattern": "no-retry"}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory_set", {"id": "retry", **NOTE, "operation_id": "op-1"}),
    ("memory_set", {"id": "retry", **NOTE, "operation_id": "op-1"}),  # replayed
    ("memory_set", {"id": "retry", **NOTE, "if_version": 0}),  # conflict
    ("memory_get", {"id": "retry"}),
    ("memory_search", {"query": "retry"}),
    ("memory_list", {}),
    ("memory_history", {"id": "retry"}),
    ("memory_delete", {"id": "retry"}),
    ("memory_rollback", {"id": "retry", "version_index": 1}),
    ("memory_prune_candidates", {"days": 1}),
    ("list_datasets", {}),
    ("create_dataset", {"name": "extra"}),
    ("save_to_dataset", {"dataset": "knowledge", "name": "a.md", "text": "Webhooks retry five times."}),
    ("search_memory", {"query": "webhooks retry"}),
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
    ("absorb_files", {"files": ["README.md", "../outside.md"]}),
    ("get_memory_config", {}),
    ("cron_health", {"limit": 5}),
]


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpBridge]:
    project = tmp_path_factory.mktemp("schema-project")
    (project / "README.md").write_text("# Readme\n\nHow to run the service.\n")
    with http_bridge(project) as running:
        yield running


async def test_every_tool_lists_an_object_output_schema_with_its_fields(bridge: HttpBridge) -> None:
    async with Client(bridge.mcp_url) as client:
        tools = (await client.list_tools()).tools
    assert {tool.name for tool in tools} == set(ENTRY_TOOLS) | set(KNOWLEDGE_TOOLS)
    for tool in tools:
        schema = tool.output_schema
        assert schema is not None, tool.name
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["properties"], tool.name


async def test_results_are_structured_valid_and_identical_to_their_text(bridge: HttpBridge) -> None:
    ids: dict[str, Any] = {}  # a document's name, as an argument, stands for its id once saved
    async with Client(bridge.mcp_url) as client:
        schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
        for name, arguments in CALLS:
            filled = {k: ids.get(v, v) if isinstance(v, str) else v for k, v in arguments.items()}
            result = await client.call_tool(name, filled)
            assert not result.is_error, (name, result.content)
            text = result.content[0].text  # type: ignore[union-attr]
            structured = result.structured_content
            assert structured is not None, name
            errors = list(Draft202012Validator(schemas[name]).iter_errors(structured))
            assert not errors, (name, errors)
            # the same object, keys in the same order: the text is the seed's JSON of it
            assert json.dumps(json.loads(text)) == json.dumps(structured), name
            if "documentId" in structured and "name" in structured:
                ids[structured["name"]] = structured["documentId"]
    assert set(schemas) == {name for name, _ in CALLS}


async def test_an_error_result_keeps_its_shape_next_to_an_output_schema(bridge: HttpBridge) -> None:
    async with Client(bridge.mcp_url) as client:
        result = await client.call_tool("memory_get", {"id": "no-such-entry"})
    assert result.is_error and result.structured_content is None
    assert result.content[0].text == '{"error":"Not found: no-such-entry"}'  # type: ignore[union-attr]
