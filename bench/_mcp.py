"""MCP SDK client sessions and entry-tool calls, shared by the benchmark's parts."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any

from mcp import Client


class BenchError(RuntimeError):
    """A call failed: the numbers would be meaningless."""


async def open_client(stack: AsyncExitStack, url: str) -> Client:
    """An SDK client session (initialize handshake) that has listed the tools once.

    The SDK lists tools on a session's first call_tool to learn the output schemas it
    validates results against; listing up front keeps that round trip out of the numbers.
    """
    client = await stack.enter_async_context(Client(url, mode="legacy"))
    await client.list_tools()
    return client


async def call_tool(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call an entry tool and return its structured result; raise on an error result.

    An in-band refusal (`{"ok": false, "error": "conflict"}`) is a result, not an error.
    """
    result = await client.call_tool(name, arguments)
    if result.is_error:
        text = getattr(result.content[0], "text", "") if result.content else ""
        raise BenchError(f"{name} {json.dumps(arguments)[:200]} failed: {text}")
    return dict(result.structured_content or {})
