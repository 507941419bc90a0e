"""Registering a tool: cleaned docstring as description, store errors as error results."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from .._errors import StoreError, StoreUnavailable

__all__ = ["DESTRUCTIVE", "READ_ONLY", "WRITE", "ToolFn", "ToolResult", "error_result", "tool_registrar"]

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)

ToolResult = dict[str, Any]
ToolFn = Callable[..., Awaitable[ToolResult]]


def error_result(message: str) -> CallToolResult:
    """memory-mcp's in-band error object (compact JSON), flagged as an error result."""
    text = json.dumps({"error": message}, separators=(",", ":"), ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _store_errors_as_results(fn: ToolFn, on_outage: Callable[[], None]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except StoreError as exc:
            if isinstance(exc, StoreUnavailable):
                on_outage()
            return error_result(str(exc))

    return wrapper


def tool_registrar(
    mcp: MCPServer[Any], on_outage: Callable[[], None]
) -> Callable[..., Callable[[ToolFn], ToolFn]]:
    """`@tool(title, annotations, name=...)`: add a function to `mcp` as a tool; a store
    outage it runs into is reported to `on_outage`."""

    def tool(title: str, annotations: ToolAnnotations, name: str | None = None) -> Callable[[ToolFn], ToolFn]:
        def register(fn: ToolFn) -> ToolFn:
            mcp.add_tool(
                _store_errors_as_results(fn, on_outage),
                name=name or fn.__name__,
                title=title,
                description=inspect.cleandoc(fn.__doc__ or ""),
                annotations=annotations,
            )
            return fn

        return register

    return tool
