"""A stdio bridge answers initialize and tools/list without loading what only later calls need.

The client spawns `memctl serve` before its first tool call, so every module imported on the
way to the first tools/list answer is start-up time (bench/startup.py measures it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from ..bridges import bridge_env

pytestmark = pytest.mark.anyio

# `memctl serve`, recording the modules it has loaded when the client closes its stdin.
_RECORDING_SERVE = """
import atexit, json, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
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


async def test_tools_list_loads_no_model_http_client_or_valkey(tmp_path: Path) -> None:
    record = tmp_path / "modules.json"
    project = tmp_path / "project"
    project.mkdir()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", _RECORDING_SERVE, str(record), "serve", "--project", str(project)],
        env=bridge_env(),
        cwd=str(project),
    )
    async with Client(params) as client:
        tools = await client.list_tools()
    assert "memory_set" in {tool.name for tool in tools.tools}
    loaded = set(json.loads(record.read_text()))
    assert "memory_bridge._server" in loaded  # the record is the server's own
    assert not [name for name in DEFERRED if name in loaded]
