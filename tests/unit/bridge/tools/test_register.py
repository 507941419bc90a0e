"""Registering tools: store errors and the deadline become error results, an outage wakes
the backends' watch, and a tool must take the lifespan context."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from memory_bridge import StoreUnavailable, load_settings, open_state
from memory_bridge.core._results import ToolResult
from memory_bridge.tools._register import READ_ONLY, WRITE, ToolSet, add_tools
from memory_bridge.tools._state import AppState, ToolContext, state_of

pytestmark = pytest.mark.anyio


class Echo(ToolResult):
    scope: str


class Watch:
    def __init__(self) -> None:
        self.suspected = 0

    def suspect(self) -> None:
        self.suspected += 1


tools = ToolSet()


@tools.tool("Echo the scope", READ_ONLY)
async def echo(ctx: ToolContext) -> Echo:
    """Answer the project's scope."""
    return Echo(scope=state_of(ctx).settings.project_scope)


@tools.tool("Fail with an outage", READ_ONLY)
async def outage(ctx: ToolContext) -> Echo:
    """Always unavailable."""
    raise StoreUnavailable("the store is down", operation="outage")


@tools.tool("Hang", WRITE, name="hang_write")
async def hang(ctx: ToolContext) -> Echo:
    """Never finishes."""
    await anyio.sleep(10)
    raise AssertionError("unreachable")


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Client, AppState]]:
    settings = load_settings(project=tmp_path, embedding_model="none", tool_timeout_seconds=0.2)
    async with open_state(settings) as opened:
        state = dataclasses.replace(opened, backends=Watch())  # type: ignore[arg-type]

        @asynccontextmanager
        async def lifespan(_: MCPServer[AppState]) -> AsyncIterator[AppState]:
            yield state

        mcp: MCPServer[AppState] = MCPServer("t", lifespan=lifespan)
        add_tools(mcp, tools)
        async with Client(mcp) as client:
            yield client, state


async def test_a_tool_reads_the_lifespan_state_and_lists_its_metadata(
    served: tuple[Client, AppState],
) -> None:
    client, state = served
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(listed) == ["echo", "outage", "hang_write"]
    assert (
        listed["echo"].title == "Echo the scope"
        and listed["echo"].description == "Answer the project's scope."
    )
    assert listed["echo"].input_schema["properties"] == {}  # ctx is not an argument
    assert listed["hang_write"].annotations == WRITE
    result = await client.call_tool("echo", {})
    assert result.structured_content == {"scope": state.settings.project_scope}


async def test_an_outage_is_an_error_result_and_wakes_the_watch(served: tuple[Client, AppState]) -> None:
    client, state = served
    result = await client.call_tool("outage", {})
    assert result.is_error and result.content[0].text == '{"error":"the store is down"}'  # type: ignore[union-attr]
    assert state.backends.suspected == 1  # type: ignore[attr-defined]


async def test_the_deadline_stops_a_call_with_a_reason(served: tuple[Client, AppState]) -> None:
    client, _ = served
    result = await client.call_tool("hang_write", {})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and "hang_write did not finish within 0.2 s" in text and "operation_id" in text


def test_a_tool_without_the_context_parameter_is_refused() -> None:
    with pytest.raises(TypeError, match="ctx: ToolContext"):

        @ToolSet().tool("No context", READ_ONLY)
        async def bare() -> Echo:
            return Echo(scope="")
