"""The MCP SDK's private parts, in this one module.

The bridge needs three things the SDK's public API does not offer; each is reached here,
through a small typed function, and nowhere else:

- the low-level server under an `MCPServer` (`MCPServer._lowlevel_server`), to run it on
  the bridge's own stdio streams and to be told before the SDK reads a tool's input schema
  (the low-level server's public `get_tool_input_schema`), so tools added lazily are there;
- a tool's argument handling, replaced: the SDK keeps the `Tool` that `add_tool` builds in
  its tool manager (`MCPServer._tool_manager`), whose `fn_metadata` is a `FuncMetadata`
  (`mcp.server.mcpserver.utilities.func_metadata`), subclassed here;
- which parameter of a tool function takes the `Context`
  (`mcp.server.mcpserver.utilities.context_injection.find_context_parameter`).

`PRIVATE_NAMES` lists them. tests/unit/bridge/test_sdk.py checks each against the
installed SDK, failing with the SDK's version and what moved, and fails if another module
names one. The cached `tools/list` answer (`_listing`) is right only while these work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.context_injection import find_context_parameter
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import BaseModel, PrivateAttr, ValidationError

__all__ = [
    "PRIVATE_NAMES",
    "InvalidArguments",
    "before_schema_lookup",
    "context_parameter",
    "handle_arguments",
    "lowlevel_server",
]

PRIVATE_NAMES = (
    "_lowlevel_server",
    "_tool_manager",
    "fn_metadata",
    "FuncMetadata",
    "find_context_parameter",
    "mcp.server.mcpserver.utilities",
)
"""What of the SDK only this module may name (attributes, classes, functions, modules)."""

InvalidArguments = Callable[[ValidationError, type[BaseModel]], Any]
"""Makes the result a tool answers when its arguments fail validation against its model."""


def lowlevel_server(mcp: MCPServer[Any]) -> Server[Any]:
    """The low-level server that `mcp` runs on (it serves the transports)."""
    server: Server[Any] = mcp._lowlevel_server
    return server


def before_schema_lookup(mcp: MCPServer[Any], hook: Callable[[], None]) -> None:
    """Call `hook` each time the SDK reads a tool's input schema to validate a call (before
    its middleware runs), then read it as the SDK would."""
    lowlevel = lowlevel_server(mcp)
    lookup = lowlevel.get_tool_input_schema

    def schema(name: str) -> Mapping[str, Any] | None:
        hook()
        return None if lookup is None else lookup(name)

    lowlevel.get_tool_input_schema = schema


def context_parameter(fn: Callable[..., Any]) -> str | None:
    """The name of `fn`'s parameter that takes the SDK's `Context`, if it has one."""
    return find_context_parameter(fn)


_INVALID = "\x00invalid"
"""The key under which `validate_arguments` hands `call_fn` the invalid-arguments result (no
argument name can hold a NUL)."""


class _Arguments(FuncMetadata):
    """The SDK's argument handling, except that a string sent for a key of `_kept` is kept
    as sent, and arguments that fail validation are answered with `_invalid`'s result."""

    _kept: frozenset[str] = PrivateAttr(default=frozenset())
    _invalid: InvalidArguments | None = PrivateAttr(default=None)

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = super().pre_parse_json(data)
        for key, value in data.items():
            if isinstance(value, str) and key in self._kept:
                parsed[key] = value
        return parsed

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        try:
            return super().validate_arguments(arguments_to_validate)
        except ValidationError as exc:
            if self._invalid is None:
                raise
            return {_INVALID: self._invalid(exc, self.arg_model)}

    async def call_fn(
        self,
        fn: Callable[..., Any | Awaitable[Any]],
        fn_is_async: bool,
        arguments: dict[str, Any],
        arguments_to_pass_directly: dict[str, Any] | None = None,
    ) -> Any:
        if _INVALID in arguments:
            return arguments[_INVALID]
        return await super().call_fn(fn, fn_is_async, arguments, arguments_to_pass_directly)


def handle_arguments(
    mcp: MCPServer[Any],
    name: str,
    *,
    kept: Callable[[type[BaseModel]], Iterable[str]],
    invalid: InvalidArguments,
) -> None:
    """Change how tool `name` of `mcp` reads its arguments: a string sent for a key that
    `kept(argument model)` names stays as sent (the SDK parses it as JSON otherwise), and
    arguments that fail validation are answered with `invalid(error, argument model)`.
    Its argument model and output schema stay the SDK's."""
    tool = mcp._tool_manager.get_tool(name)
    if tool is None:
        return
    metadata = tool.fn_metadata
    arguments = _Arguments(
        arg_model=metadata.arg_model,
        output_schema=metadata.output_schema,
        output_model=metadata.output_model,
        wrap_output=metadata.wrap_output,
    )
    arguments._kept = frozenset(kept(metadata.arg_model))
    arguments._invalid = invalid
    tool.fn_metadata = arguments
