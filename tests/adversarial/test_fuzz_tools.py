"""Every tool, fuzzed from its own input schema, over stdio and over HTTP.

Each call gets valid arguments drawn from the tool's input schema, then (most of the time)
one argument swapped for something hostile: a wrong type, a huge or deeply nested value,
NUL bytes, FTS5 and glob syntax, path traversal. Every call must be answered (a result, or
an error that says why) within a bounded wait, and the bridge must still serve afterwards.
Bounded: a fixed number of examples per tool, derandomized, loopback only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from mcp_types import CONNECTION_CLOSED

from memory_bridge.tools._entries import ENTRY_TOOLS
from memory_bridge.tools._knowledge import KNOWLEDGE_TOOLS

from ..bridges import http_bridge, stdio_params
from .judge import BOUND_SECONDS, assert_answered
from .schemas import valid_arguments

pytestmark = [pytest.mark.e2e]

EXAMPLES_PER_TOOL = 12

_NAMED = [
    "",
    "\x00",
    "docs/\x00notes.md",
    ".",
    "..",
    "../../../etc/passwd",
    "/etc/passwd",
    "docs/../../outside.md",
    "~/.ssh/id_rsa",
    "*a*a*a*a*a*a*a*a*a*a*b",
    "**/**/**/**/**/**/*.md",
    "[!a-z]{1,3}?*",
    '"unterminated phrase',
    "NEAR(alpha beta, 2) OR title:x AND NOT y*",
    "^ * - : ( ) \" ' ; -- DROP TABLE entries",
    "a" * 100_000,
    "\U0001d54f" * 2_000,
    "\u202eevil\r\n\t\x0b\x1b[31m",
    "{{7*7}} ${HOME} %s%n",
]
HOSTILE_TEXT = st.sampled_from(_NAMED) | st.text(
    st.characters(exclude_categories=["Cs"]), max_size=40
)  # lone surrogates are the raw-wire test's business: a client cannot even encode them
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
)
HOSTILE = st.one_of(
    HOSTILE_TEXT,
    _SCALARS,
    st.lists(HOSTILE_TEXT | _SCALARS, max_size=1_200),
    st.dictionaries(HOSTILE_TEXT, HOSTILE_TEXT | _SCALARS, max_size=5),
    st.integers(1, 240).map(lambda depth: json.loads("[" * depth + "]" * depth)),  # the client encodes ~250
)


def arguments(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Valid arguments from the schema, usually with one of them (or an unknown one) hostile."""
    valid = valid_arguments(schema)
    names = [*sorted(schema.get("properties", {})), "unexpected"]

    def spoil(args: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        return st.tuples(st.sampled_from(names), HOSTILE).map(lambda kv: {**args, kv[0]: kv[1]})

    return st.one_of(valid, valid.flatmap(spoil), valid.flatmap(spoil), valid.flatmap(spoil))


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


@pytest.fixture(scope="module", params=["stdio", "http"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    project = _workspace(tmp_path_factory.mktemp("fuzz-project"))
    with start_blocking_portal() as portal:
        if request.param == "stdio":
            with portal.wrap_async_context_manager(Client(stdio_params(project), mode="legacy")) as client:
                yield Session(portal, client)
        else:
            with (
                http_bridge(project) as bridge,
                portal.wrap_async_context_manager(Client(bridge.mcp_url, mode="legacy")) as client,
            ):
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
