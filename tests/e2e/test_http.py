"""The HTTP bridge end to end: real process, real SDK client, real HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client.parser import text_string_to_metric_families

from memory_bridge import ENTRY_TOOLS, KNOWLEDGE_TOOLS

from ..bridges import INITIALIZE, MCP_HEADERS, HttpBridge, bridge_env, free_port, http_bridge

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ENTRY = {
    "id": "deploy-runbook",
    "title": "Deploy runbook",
    "body": "Blue-green via the ingress.",
    "type": "reference",
    "tags": ["deploy", "ops"],
    "project": "app",
}


def payload(result: Any) -> dict[str, Any]:
    return dict(json.loads(result.content[0].text))


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpBridge]:
    with http_bridge(tmp_path_factory.mktemp("http-project"), MEMCTL_MAX_BODY_BYTES="4096") as running:
        yield running


@pytest.fixture(scope="module")
def token_bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpBridge, str]]:
    project = tmp_path_factory.mktemp("auth-project")
    token_file = project / "token"
    token_file.write_text("s3cret-token-value\n")
    token_file.chmod(0o600)
    with http_bridge(project, "--token-file", str(token_file)) as running:
        yield running, "s3cret-token-value"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_save_and_search_over_both_protocol_eras(bridge: HttpBridge, mode: str) -> None:
    async with Client(bridge.mcp_url, mode=mode) as client:  # type: ignore[arg-type]
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools == set(ENTRY_TOOLS) | set(KNOWLEDGE_TOOLS)
        entry_id = f"runbook-{mode}"
        saved = payload(await client.call_tool("memory_set", {**ENTRY, "id": entry_id}))
        assert saved["ok"] is True and saved["revision"] >= 1
        found = payload(
            await client.call_tool("memory_search", {"query": "blue green ingress", "tags": ["deploy"]})
        )
        assert entry_id in [r["id"] for r in found["results"]]


def test_legacy_initialize_opens_a_session(bridge: HttpBridge) -> None:
    response = httpx.post(bridge.mcp_url, json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 200
    session = response.headers["mcp-session-id"]
    assert session and all(0x21 <= ord(c) <= 0x7E for c in session)
    assert '"serverInfo":{"name":"memctl"' in response.text


async def test_not_found_and_validation_errors_name_the_problem(bridge: HttpBridge) -> None:
    async with Client(bridge.mcp_url, mode="legacy") as client:
        missing = await client.call_tool("memory_get", {"id": "no-such-entry"})
        assert missing.is_error
        assert missing.content[0].text == '{"error":"Not found: no-such-entry"}'  # type: ignore[union-attr]
        before = payload(await client.call_tool("memory_list", {}))["total"]
        bad = await client.call_tool("memory_set", {**ENTRY, "id": "comma-tag", "tags": ["a,b"]})
        assert bad.is_error
        assert bad.content[0].text.startswith('{"error":"tags[0]: must match pattern')  # type: ignore[union-attr]
        bad_id = await client.call_tool("memory_set", {**ENTRY, "id": "has space"})
        assert bad_id.is_error and bad_id.content[0].text.startswith('{"error":"id: ')  # type: ignore[union-attr]
        bad_limit = await client.call_tool("memory_search", {"limit": 0})
        assert bad_limit.is_error
        assert "limit: must be greater than 0." in bad_limit.content[0].text  # type: ignore[union-attr]
        assert payload(await client.call_tool("memory_list", {}))["total"] == before


def test_malformed_oversized_and_unacceptable_requests_are_refused(bridge: HttpBridge) -> None:
    count_before = _metric(bridge, "memory_entries_total")
    parse = httpx.post(bridge.mcp_url, content=b'{"jsonrpc": "2.0", bad', headers=MCP_HEADERS)
    assert parse.status_code == 400
    assert parse.json()["error"]["code"] == -32700
    oversized = {**INITIALIZE, "params": {**INITIALIZE["params"], "pad": "x" * 8192}}
    too_big = httpx.post(bridge.mcp_url, json=oversized, headers=MCP_HEADERS)
    assert too_big.status_code == 413
    wrong_accept = httpx.post(bridge.mcp_url, json=INITIALIZE, headers={"Accept": "text/html"})
    assert wrong_accept.status_code == 406
    assert wrong_accept.json()["error"]["message"].startswith("Not Acceptable")
    assert _metric(bridge, "memory_entries_total") == count_before


def test_foreign_host_and_origin_headers_are_rejected(bridge: HttpBridge) -> None:
    evil_host = httpx.post(
        bridge.mcp_url, json=INITIALIZE, headers={**MCP_HEADERS, "Host": "evil.example.com"}
    )
    assert 400 <= evil_host.status_code < 500
    evil_origin = httpx.post(
        bridge.mcp_url, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://evil.example.com"}
    )
    assert 400 <= evil_origin.status_code < 500


def _metric(bridge: HttpBridge, name: str, **labels: str) -> float:
    text = httpx.get(f"{bridge.base_url}/metrics").text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    raise AssertionError(f"metric {name}{labels} not exported")


async def test_metrics_count_writes_conflicts_searches_and_tool_outcomes(bridge: HttpBridge) -> None:
    writes = _metric(bridge, "memory_write_total")
    conflicts = _metric(bridge, "memory_conflict_total")
    async with Client(bridge.mcp_url, mode="legacy") as client:
        await client.call_tool("memory_set", {**ENTRY, "id": "metrics-entry"})
        await client.call_tool("memory_set", {**ENTRY, "id": "metrics-entry", "if_version": 0})
        await client.call_tool("memory_search", {"query": "zzzz-never-matches"})
        await client.call_tool("memory_get", {"id": "metrics-entry"})
        await client.call_tool("memory_get", {"id": "metrics-missing"})
    assert _metric(bridge, "memory_write_total") == writes + 1
    assert _metric(bridge, "memory_conflict_total") == conflicts + 1
    assert _metric(bridge, "memory_search_empty_total") >= 1
    assert _metric(bridge, "memory_entries_total") >= 1
    assert _metric(bridge, "memctl_tool_calls_total", tool="memory_set", outcome="conflict") >= 1
    assert _metric(bridge, "memctl_tool_calls_total", tool="memory_get", outcome="ok") >= 1
    assert _metric(bridge, "memctl_tool_calls_total", tool="memory_get", outcome="error") >= 1
    assert _metric(bridge, "memctl_tool_duration_seconds_count", tool="memory_set", outcome="ok") >= 1
    assert _metric(bridge, "memory_search_duration_seconds_count") >= 1


async def test_bearer_token_guards_mcp_but_not_health_or_metrics(
    token_bridge: tuple[HttpBridge, str],
) -> None:
    bridge, token = token_bridge
    missing = httpx.post(bridge.mcp_url, json=INITIALIZE, headers=MCP_HEADERS)
    assert missing.status_code == 401
    assert missing.json() == {"error": "Unauthorized"}
    wrong = httpx.post(
        bridge.mcp_url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer nope"}
    )
    assert wrong.status_code == 401
    wrong_case_token = httpx.post(
        bridge.mcp_url,
        json=INITIALIZE,
        headers={**MCP_HEADERS, "Authorization": f"Bearer {token.upper()}"},
    )
    assert wrong_case_token.status_code == 401
    lower_scheme = httpx.post(
        bridge.mcp_url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"bearer {token}"}
    )
    assert lower_scheme.status_code == 200, "the auth scheme is case-insensitive (RFC 9110)"
    assert httpx.get(f"{bridge.base_url}/health").status_code == 200
    assert httpx.get(f"{bridge.base_url}/metrics").status_code == 200
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(bridge.mcp_url, http_client=http), mode="legacy") as client,
    ):
        saved = payload(await client.call_tool("memory_set", {**ENTRY, "id": "authed"}))
        assert saved["ok"] is True


def test_health_turns_503_quickly_when_the_store_becomes_unusable(tmp_path: Path) -> None:
    with http_bridge(tmp_path) as bridge:
        assert httpx.get(f"{bridge.base_url}/health").json() == {"ok": True}
        for path in (tmp_path / ".memory").glob("entries.db*"):
            path.unlink()
        started = time.monotonic()
        response = httpx.get(f"{bridge.base_url}/health", timeout=5)
        assert response.status_code == 503
        assert time.monotonic() - started < 2.5
        assert response.json()["ok"] is False
        assert "removed" in response.json()["error"]


def serve_http_once(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `memctl serve --http` that is expected to refuse to start."""
    command = [
        sys.executable,
        "-m",
        "memctl",
        "serve",
        "--project",
        str(project),
        "--http",
        "--port",
        str(free_port()),
        *args,
    ]
    return subprocess.run(command, env=bridge_env(), capture_output=True, text=True, timeout=30)


def test_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    result = serve_http_once(tmp_path, "--host", "0.0.0.0")
    assert result.returncode == 2
    assert "without a bearer token" in result.stderr
    assert not (tmp_path / ".memory").exists(), "nothing is created when the bridge refuses to start"


def test_refuses_a_token_file_others_can_read(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("abc")
    token_file.chmod(0o644)
    result = serve_http_once(tmp_path, "--token-file", str(token_file))
    assert result.returncode == 2
    assert "chmod 600" in result.stderr
    assert "abc" not in result.stderr
