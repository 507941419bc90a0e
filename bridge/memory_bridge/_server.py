"""Building the MCP server: tools, per-tool metrics, server identity."""

from __future__ import annotations

import time
from importlib.metadata import version
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult

from .tools._entries import ENTRY_TOOLS, register_entry_tools
from .tools._state import AppState

__all__ = ["SERVER_NAME", "build_server"]

SERVER_NAME = "memctl"
_INSTRUCTIONS = (
    "Project memory. Search before you start work (memory_search with a query or tags); "
    "save decisions, patterns and incidents with memory_set; read an entry's revision with "
    "memory_get and pass it as if_version when you update it."
)


def _outcome(result: HandlerResult) -> str:
    """ok, error, or the in-band refusal (conflict, operation_id_mismatch) of a tool result."""
    if isinstance(result, CallToolResult):
        result = result.model_dump(by_alias=True)
    if not isinstance(result, dict):
        return "ok"
    if result.get("isError"):
        return "error"
    structured = result.get("structuredContent") or {}
    if structured.get("ok") is False:
        return str(structured.get("error") or "rejected")
    return "ok"


def build_server(state: AppState) -> MCPServer[Any]:
    """The MCP server serving `state`'s store, with every call counted and timed."""
    mcp: MCPServer[Any] = MCPServer(
        SERVER_NAME,
        version=version("memctl"),
        instructions=_INSTRUCTIONS,
        log_level=state.settings.log_level,
    )

    async def count_tool_calls(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        name = (ctx.params or {}).get("name")
        tool = name if name in ENTRY_TOOLS else "unknown"  # bounded label values
        started = time.perf_counter()
        outcome = "error"
        try:
            result = await call_next(ctx)
            outcome = _outcome(result)
            return result
        finally:
            state.metrics.observe_tool(tool, outcome, time.perf_counter() - started)

    mcp.middleware.append(count_tool_calls)
    register_entry_tools(mcp, state)
    return mcp
