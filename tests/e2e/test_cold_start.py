"""A stdio bridge answers initialize and tools/list without loading what only later calls need.

The client spawns `memctl serve` before its first tool call, so every module imported on the
way to the first tools/list answer is start-up time (bench/startup.py measures it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from ..bridges import bridge_env, free_port, serving

pytestmark = pytest.mark.anyio

# `memctl serve`, recording the modules it has loaded once it has answered tools/list (first
# argument) and once it has added its tools (second).
_RECORDING_SERVE = """
import json, sys
listed, added = sys.argv.pop(1), sys.argv.pop(1)
def record(path):
    with open(path, "w") as out:
        json.dump(sorted(sys.modules), out)
from memory_bridge import _server
answer, add = _server._Server.list_tools, _server._Server.ensure_tools
async def list_tools(self):
    tools = await answer(self)
    record(listed)
    return tools
def add_tools(self):
    first = not self._tools_added
    add(self)
    if first:
        record(added)
_server._Server.list_tools = list_tools
_server._Server.ensure_tools = add_tools
from memctl.cli import cli
cli(prog_name="memctl")
"""

DEFERRED = (
    "numpy",
    "onnxruntime",
    "tokenizers",
    "httpx",
    "valkey",
    "prometheus_client",
    "memory_bridge._http",
    "memory_bridge._workers",
)
"""Loaded by the model, the Dify or Valkey store, the metrics, or HTTP (and its workers), when used."""

TOOLS = ("memory_bridge.tools._entries", "memory_bridge.tools._knowledge", "memory_bridge.core._results")
"""The tools and their result models: loaded a moment after a listing answered from the
cache, by the first tools/call if it comes sooner, or by a start with no cached listing."""


def _recording(tmp_path: Path) -> tuple[list[str], Path]:
    """The arguments after the Python executable that run `memctl serve` recording its
    modules (in tmp_path's listed.json and added.json), for a project it makes there."""
    (tmp_path / "added.json").unlink(missing_ok=True)
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    listed, added = str(tmp_path / "listed.json"), str(tmp_path / "added.json")
    return ["-c", _RECORDING_SERVE, listed, added, "serve", "--project", str(project)], project


def _recording_env(tmp_path: Path) -> dict[str, str]:
    return bridge_env(MEMCTL_MODEL_CACHE_DIR=str(tmp_path / "cache"))


async def _serve(tmp_path: Path, *, then_call: str | None = None) -> tuple[list[str], set[str], set[str]]:
    """Spawn `memctl serve` as a client config does and list its tools; with `then_call`,
    wait until the server has added its tools by itself, then call that tool. The tools'
    names, and the modules loaded once tools/list was answered and once the tools were added."""
    listed, added = tmp_path / "listed.json", tmp_path / "added.json"
    args, project = _recording(tmp_path)
    params = StdioServerParameters(
        command=sys.executable, args=args, env=_recording_env(tmp_path), cwd=str(project)
    )
    async with Client(params) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        if then_call is not None:
            with anyio.fail_after(60):  # a generous bound, not a timing: it takes about a second
                while not added.exists():
                    await anyio.sleep(0.05)
            assert not (await client.call_tool(then_call, {})).is_error
    return names, set(json.loads(listed.read_text())), set(json.loads(added.read_text()))


async def test_tools_list_loads_no_model_http_client_valkey_or_tools(tmp_path: Path) -> None:
    first, built, _ = await _serve(tmp_path)  # no cached listing yet: this start builds it
    assert "memory_set" in first
    assert "memory_bridge._server" in built  # the record is the server's own
    assert not [name for name in DEFERRED if name in built]

    names, listed, added = await _serve(tmp_path, then_call="memory_list")
    assert names == first
    assert not [name for name in (*DEFERRED, *TOOLS) if name in listed]
    assert set(TOOLS) <= added  # added after the listing without a call; the call is served
    assert not [name for name in DEFERRED if name in added]


def test_an_http_bridge_has_its_tools_before_it_answers(tmp_path: Path) -> None:
    """A long-running HTTP server adds its tools before it listens, so no worker's first
    tools/call waits for them (nobody waits on its start the way a stdio client does)."""
    args, project = _recording(tmp_path)
    port = free_port()
    argv = [sys.executable, *args, "--http", "--port", str(port)]
    added = tmp_path / "added.json"
    with serving(argv, _recording_env(tmp_path), f"http://127.0.0.1:{port}", cwd=project):
        assert added.exists(), "healthy, but the tools are not added yet: the first call would add them"
        assert set(TOOLS) <= set(json.loads(added.read_text()))
