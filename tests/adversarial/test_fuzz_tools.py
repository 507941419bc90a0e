"""Every tool, fuzzed from its own input schema, over stdio and over HTTP.

Each call gets valid arguments drawn from the tool's input schema, then (most of the time)
one argument swapped for something hostile: a wrong type, a huge or deeply nested value,
NUL bytes, FTS5 and glob syntax, path traversal. Every call must be answered (a result, or
an error that says why) within a bounded wait, and the bridge must still serve afterwards.
The HTTP bridge runs once on the embedded stores and once with its entries on a real
valkey-server. Bounded: a fixed number of examples per tool, derandomized, loopback only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from mcp import Client, MCPError
from mcp_types import CONNECTION_CLOSED

from memory_bridge import ENTRY_TOOLS, KNOWLEDGE_TOOLS

from ..bridges import http_bridge, stdio_params
from ..servers import run_server, valkey_server_binary
from .judge import BOUND_SECONDS, assert_answered
from .strategies import arguments

pytestmark = [pytest.mark.e2e]

EXAMPLES_PER_TOOL = 12


class Session:
    """A real SDK client in a blocking portal, so hypothesis (synchronous) can drive it."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal = portal
        self.client = client
        tools = portal.call(client.list_tools).tools
        self.schemas = {tool.name: tool.input_schema for tool in tools}

    def call(self, name: str, args: dict[str, Any]) -> Any:
        async def bounded() -> Any:
            with anyio.fail_after(BOUND_SECONDS):
                try:
                    return await self.client.call_tool(name, args)
                except MCPError as exc:
                    assert exc.error.code != CONNECTION_CLOSED, (
                        f"the bridge went away on {name}({args!r:.300})"
                    )
                    return exc

        return self.portal.call(bounded)


def _workspace(project: Path) -> Path:
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "notes.md").write_text("# Notes\n\nThe deploy runs blue-green.\n")
    return project


@pytest.fixture(scope="module", params=["stdio", "http", "http-valkey"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """A session per transport; `http-valkey` puts the entries on a real valkey-server."""
    project = _workspace(tmp_path_factory.mktemp("fuzz-project"))
    with start_blocking_portal() as portal, ExitStack() as stack:
        if request.param == "stdio":
            client = stack.enter_context(
                portal.wrap_async_context_manager(Client(stdio_params(project), mode="legacy"))
            )
        else:
            args = []
            if request.param == "http-valkey":
                args = ["--entry-store", stack.enter_context(run_server(valkey_server_binary())).url]
            bridge = stack.enter_context(http_bridge(project, *args))
            client = stack.enter_context(
                portal.wrap_async_context_manager(Client(bridge.mcp_url, mode="legacy"))
            )
        yield Session(portal, client)


@pytest.mark.parametrize("tool", [*ENTRY_TOOLS, *KNOWLEDGE_TOOLS])
def test_every_call_is_answered_with_a_reason(session: Session, tool: str) -> None:
    @settings(
        max_examples=EXAMPLES_PER_TOOL,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(args=arguments(session.schemas[tool]))
    def fuzz(args: dict[str, Any]) -> None:
        assert_answered(session.call(tool, args))

    fuzz()
    still = session.call("memory_get", {"id": "fuzz-probe"})  # the bridge still serves
    assert not isinstance(still, MCPError)
