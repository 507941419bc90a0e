"""Registering a tool: cleaned docstring as description, store errors and the call's
deadline as error results."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
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


def _timeout_message(name: str, timeout: float, annotations: ToolAnnotations) -> str:
    message = f"{name} did not finish within {timeout:g} s and was stopped"
    if annotations.read_only_hint:
        return message + "; retry it, or narrow the request"
    return (
        message + "; whether it changed anything is unknown: read the current state before retrying, "
        "or retry with the same operation_id where the tool takes one"
    )


def _errors_as_results(
    fn: ToolFn, name: str, timeout: float, annotations: ToolAnnotations, on_outage: Callable[[], None]
) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with anyio.fail_after(timeout):
                return await fn(*args, **kwargs)
        except StoreError as exc:
            if isinstance(exc, StoreUnavailable):
                on_outage()
            return error_result(str(exc))
        except TimeoutError:
            return error_result(_timeout_message(name, timeout, annotations))

    return wrapper


def tool_registrar(
    mcp: MCPServer[Any], timeout: float, on_outage: Callable[[], None]
) -> Callable[..., Callable[[ToolFn], ToolFn]]:
    """`@tool(title, annotations, name=...)`: add a function to `mcp` as a tool that answers
    an error result once it has run for `timeout` seconds; a store outage it runs into is
    reported to `on_outage`."""

    def tool(title: str, annotations: ToolAnnotations, name: str | None = None) -> Callable[[ToolFn], ToolFn]:
        def register(fn: ToolFn) -> ToolFn:
            tool_name = name or fn.__name__
            mcp.add_tool(
                _errors_as_results(fn, tool_name, timeout, annotations, on_outage),
                name=tool_name,
                title=title,
                description=inspect.cleandoc(fn.__doc__ or ""),
                annotations=annotations,
            )
            return fn

        return register

    return tool
