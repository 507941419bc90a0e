"""The MCP SDK's private parts the bridge relies on: each still there, in the shape the adapter
(`memory_bridge._sdk`) expects, and named by no other module.

An SDK release that moves one fails here, naming the SDK's version and what moved, rather than
at start-up (or, worse, silently: a cached `tools/list` answered while calls fail).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from mcp.server import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

ROOT = Path(__file__).resolve().parents[3]
ADAPTER = ROOT / "bridge" / "memory_bridge" / "_sdk.py"
SDK = version("mcp")
_UTILITIES = "mcp.server.mcpserver.utilities"
_MISSING = object()


def moved(what: str) -> str:
    return (
        f"mcp {SDK} changed {what}, which memory_bridge._sdk relies on: adapt _sdk.py (and its "
        "PRIVATE_NAMES) to this release, or pin the SDK below it"
    )


def private(module: str, name: str) -> Any:
    """`module.name` from the SDK, or a failure saying which of the two is gone."""
    try:
        found = importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(moved(f"module {module} (it no longer imports: {exc})"))
    value = getattr(found, name, _MISSING)
    if value is _MISSING:
        pytest.fail(moved(f"{module}.{name} (it is gone)"))
    return value


def parameters(fn: Any) -> list[str]:
    return list(inspect.signature(fn).parameters)


async def probe(query: str | None = None, limit: int = 1, *, ctx: Context) -> str:
    """Answer what it was given."""
    return json.dumps([query, limit])


def probe_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("probe")
    server.add_tool(probe, name="probe")
    return server


def test_func_metadata_is_where_and_what_the_adapter_subclasses() -> None:
    cls = private(f"{_UTILITIES}.func_metadata", "FuncMetadata")
    assert isinstance(cls, type) and issubclass(cls, BaseModel), moved("FuncMetadata (no longer a model)")
    fields = {"arg_model", "output_schema", "output_model", "wrap_output"}
    assert fields <= set(cls.model_fields), moved(
        f"FuncMetadata's fields {sorted(fields - set(cls.model_fields))}"
    )
    expected = {
        "pre_parse_json": ["self", "data"],
        "validate_arguments": ["self", "arguments_to_validate"],
        "call_fn": ["self", "fn", "fn_is_async", "arguments", "arguments_to_pass_directly"],
    }
    for method, names in expected.items():
        found = getattr(cls, method, None)
        assert found is not None, moved(f"FuncMetadata.{method} (it is gone)")
        assert parameters(found) == names, moved(f"FuncMetadata.{method}'s parameters to {parameters(found)}")
    assert inspect.iscoroutinefunction(cls.call_fn), moved("FuncMetadata.call_fn (no longer async)")


def test_find_context_parameter_is_where_the_adapter_imports_it() -> None:
    find = private(f"{_UTILITIES}.context_injection", "find_context_parameter")
    assert parameters(find) == ["fn"], moved(f"find_context_parameter's parameters to {parameters(find)}")
    assert find(probe) == "ctx", moved("find_context_parameter (it no longer finds `ctx: Context`)")


def test_a_server_keeps_its_low_level_server_and_tool_manager() -> None:
    server = probe_server()
    lowlevel = getattr(server, "_lowlevel_server", _MISSING)
    assert lowlevel is not _MISSING, moved("MCPServer._lowlevel_server (it is gone)")
    assert isinstance(lowlevel, Server), moved(f"MCPServer._lowlevel_server (now a {type(lowlevel)})")
    assert callable(lowlevel.get_tool_input_schema), moved("MCPServer (it sets no get_tool_input_schema)")
    for method in ("run", "create_initialization_options"):
        assert callable(getattr(lowlevel, method, None)), moved(f"Server.{method} (it is gone)")

    manager = getattr(server, "_tool_manager", _MISSING)
    assert manager is not _MISSING, moved("MCPServer._tool_manager (it is gone)")
    assert callable(getattr(manager, "get_tool", None)), moved("the tool manager's get_tool (it is gone)")
    tool = manager.get_tool("probe")
    metadata = getattr(tool, "fn_metadata", _MISSING)
    cls = private(f"{_UTILITIES}.func_metadata", "FuncMetadata")
    assert isinstance(metadata, cls), moved(f"a tool's fn_metadata (now {type(metadata)})")
    tool.fn_metadata = metadata  # assignable, as handle_arguments needs


def test_the_schema_hook_runs_before_the_sdk_reads_a_tool_schema() -> None:
    from memory_bridge._sdk import before_schema_lookup, lowlevel_server

    server = probe_server()
    calls: list[str] = []
    before_schema_lookup(server, lambda: calls.append("hook"))
    schema = lowlevel_server(server).get_tool_input_schema
    assert schema is not None
    found = schema("probe")
    assert calls == ["hook"] and found is not None and "query" in found["properties"]
    assert schema("nope") is None and calls == ["hook", "hook"]


def _invalid(error: ValidationError, model: type[BaseModel]) -> CallToolResult:
    text = f"invalid {model.__name__}: {error.error_count()}"
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


@pytest.mark.anyio
async def test_handled_arguments_keep_text_and_answer_invalid_ones() -> None:
    from memory_bridge._sdk import handle_arguments

    server = probe_server()
    plain = await server.call_tool("probe", {"query": "null"})
    assert plain.structured_content == {"result": json.dumps([None, 1])}  # the SDK's own parsing

    handle_arguments(server, "probe", kept=lambda model: {"query"}, invalid=_invalid)
    kept = await server.call_tool("probe", {"query": "null", "limit": "2"})
    assert kept.structured_content == {"result": json.dumps(["null", 2])}
    invalid = await server.call_tool("probe", {"limit": "many"})
    assert isinstance(invalid, CallToolResult) and invalid.is_error
    assert invalid.content == [TextContent(type="text", text="invalid probeArguments: 1")]


def test_context_parameter_names_the_context_argument() -> None:
    from memory_bridge._sdk import context_parameter

    assert context_parameter(probe) == "ctx"


def _sdk_private_attributes() -> set[str]:
    """The `_`-names of the SDK's server, low-level server and tool manager (not dunders)."""
    server = probe_server()
    found: set[str] = set()
    for obj in (server, server._lowlevel_server, server._tool_manager):
        found |= {
            n for n in set(vars(obj)) | set(dir(type(obj))) if n.startswith("_") and not n.startswith("__")
        }
    return found - {"_is_protocol"}  # typing.Protocol's, not the SDK's


def _sources() -> list[Path]:
    trees = ("bridge", "ctl", "collections", "bench", "scripts", "tests")
    mine = (ADAPTER, Path(__file__).resolve())
    return [path for tree in trees for path in sorted((ROOT / tree).rglob("*.py")) if path not in mine]


def test_no_module_but_the_adapter_names_the_sdks_private_parts() -> None:
    from memory_bridge._sdk import PRIVATE_NAMES

    attributes = "|".join(map(re.escape, sorted(_sdk_private_attributes())))
    named = "|".join(re.escape(name) for name in PRIVATE_NAMES if not name.startswith("_"))
    pattern = re.compile(rf"(?:\.|\bdef\s+)(?:{attributes})\b|\b(?:{named})\b")
    found = []
    for path in _sources():
        text = path.read_text()
        found += [
            f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
            for n, line in enumerate(text.splitlines(), 1)
            if pattern.search(line)
        ]
        for node in ast.walk(ast.parse(text, str(path))):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            modules += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno}: imports {module}"
                for module in modules
                if module.startswith("mcp.server.mcpserver.")
            ]
    assert found == [], "only memory_bridge._sdk may use the SDK's private parts:\n" + "\n".join(found)
