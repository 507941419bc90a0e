"""Declaring and registering tools: cleaned docstring as description, store errors and the
call's deadline as error results.

A tool is a module-level `async def` whose last parameter is `ctx: ToolContext`; it reads
the bridge's state from the server's lifespan (`state_of(ctx)`) and returns a result model.
`ToolSet.tool` records it with its title and annotations; `add_tools` puts a set on a
server, wrapped so that a store error or the end of the deadline
(`settings.serve.tool_timeout_seconds`) becomes an `is_error` result, and an outage is reported
to the backends' watch.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from .._cause import caused_by
from .._errors import StoreError, StoreUnavailable
from .._sdk import context_parameter, handle_arguments
from ._arguments import invalid_result, text_keys
from ._error_result import error_result
from ._state import AppState, ToolContext, state_of

__all__ = [
    "DESTRUCTIVE",
    "READ_ONLY",
    "WRITE",
    "ToolFn",
    "ToolSet",
    "ToolSpec",
    "add_tools",
    "error_result",
]

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)

ToolFn = Callable[..., Awaitable[Any]]
_CONTEXT = "ctx"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: its function and what tools/list says about it besides the schemas."""

    fn: ToolFn
    name: str
    title: str
    annotations: ToolAnnotations


class ToolSet:
    """The tools of one module, in declaration order."""

    def __init__(self) -> None:
        self.specs: list[ToolSpec] = []

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.specs)

    def tool(
        self, title: str, annotations: ToolAnnotations, name: str | None = None
    ) -> Callable[[ToolFn], ToolFn]:
        """`@tools.tool(title, annotations, name=...)`: record a tool (named after the
        function unless `name` says otherwise); the function is returned unchanged."""

        def record(fn: ToolFn) -> ToolFn:
            if context_parameter(fn) != _CONTEXT:
                raise TypeError(f"tool {fn.__name__} needs a `{_CONTEXT}: ToolContext` parameter")
            self.specs.append(ToolSpec(fn, name or fn.__name__, title, annotations))
            return fn

        return record


def _timeout_message(name: str, timeout: float, annotations: ToolAnnotations) -> str:
    message = f"{name} did not finish within {timeout:g} s and was stopped"
    if annotations.read_only_hint:
        return message + "; retry it, or narrow the request"
    return (
        message + "; whether it changed anything is unknown: read the current state before retrying, "
        "or retry with the same operation_id where the tool takes one"
    )


def _errors_as_results(spec: ToolSpec) -> ToolFn:
    @functools.wraps(spec.fn)
    async def wrapper(**kwargs: Any) -> Any:
        ctx: ToolContext = kwargs[_CONTEXT]
        state: AppState = state_of(ctx)
        timeout = state.settings.serve.tool_timeout_seconds
        try:
            with anyio.fail_after(timeout), caused_by(f"tool {spec.name}"):
                return await spec.fn(**kwargs)
        except StoreError as exc:
            if isinstance(exc, StoreUnavailable):
                state.backends.suspect()
            return error_result(str(exc))
        except TimeoutError:
            return error_result(_timeout_message(spec.name, timeout, spec.annotations))

    return wrapper


def add_tools(mcp: MCPServer[AppState], tools: ToolSet) -> None:
    """Add every tool of `tools` to `mcp`, each answering an error result once it has run
    for the settings' tool timeout."""
    for spec in tools.specs:
        mcp.add_tool(
            _errors_as_results(spec),
            name=spec.name,
            title=spec.title,
            description=inspect.cleandoc(spec.fn.__doc__ or ""),
            annotations=spec.annotations,
        )
        handle_arguments(mcp, spec.name, kept=text_keys, invalid=invalid_result)
