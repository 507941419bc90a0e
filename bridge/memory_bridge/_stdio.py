"""MCP on stdio, answering every line: a malformed one gets a JSON-RPC error, as over HTTP.

The SDK's stdio transport hands a line it cannot decode (JSON nested too deep for its
parser, a lone surrogate escape such as `\\ud800`, a wrong envelope) to the server as an
exception, which the server only logs, so the client waits forever for its answer. Here
such a line is answered: -32700 (parse error) or -32600 (invalid request), with the
request's id whenever Python's own JSON parser can still read it, else `null`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable
from typing import Any, Protocol

import anyio
from anyio.abc import ObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from ._sdk import lowlevel_server

__all__ = ["BridgeServer", "malformed_reply"]


class _Replies(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


def _request_id(line: object) -> str | int | None:
    """The `id` of a request line, if Python's JSON parser can read it."""
    if not isinstance(line, str):
        return None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def malformed_reply(error: Exception) -> JSONRPCError:
    """The JSON-RPC error answering a line the transport could not decode."""
    details = error.errors(include_url=False) if isinstance(error, ValidationError) else []
    line = details[0].get("input") if details else None
    if details and details[0]["type"] == "json_invalid":
        code, message = PARSE_ERROR, f"Parse error: {details[0]['msg']}"
    else:
        code, message = INVALID_REQUEST, f"Invalid request: {error}"[:1000]
    return JSONRPCError(jsonrpc="2.0", id=_request_id(line), error=ErrorData(code=code, message=message))


async def _answer_malformed(
    source: AsyncIterable[SessionMessage | Exception],
    sink: ObjectSendStream[SessionMessage | Exception],
    replies: _Replies,
) -> None:
    async with sink:
        async for item in source:
            if isinstance(item, Exception):
                await replies.send(SessionMessage(malformed_reply(item)))
            else:
                await sink.send(item)


class BridgeServer(MCPServer[Any]):
    """The SDK's MCPServer, except that on stdio a malformed line is answered, not dropped."""

    async def run_stdio_async(self) -> None:
        lowlevel = lowlevel_server(self)
        async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as tasks:
            sink, messages = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            tasks.start_soon(_answer_malformed, read_stream, sink, write_stream)
            await lowlevel.run(messages, write_stream, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()
