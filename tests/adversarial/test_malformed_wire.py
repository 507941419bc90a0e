"""Malformed JSON-RPC on the wire: stdio answers it with a JSON-RPC error, as HTTP does.

A line nested too deep for the SDK's parser, or holding a lone surrogate escape, used to
get no reply over stdio, leaving the client waiting forever.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from ..bridges import INITIALIZE, MCP_HEADERS, bridge_env, http_bridge
from .judge import BOUND_SECONDS

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def call_line(request_id: int, arguments: str) -> str:
    """A tools/call request whose arguments are spliced in raw (they may not be valid JSON)."""
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"memory_get","arguments":{arguments}}}}}'
    )


MALFORMED = {
    2: call_line(2, '{"id":' + "[" * 300 + "]" * 300 + "}"),
    3: call_line(3, '{"id":"\\ud800"}'),
    4: call_line(4, '{"id":"x\\udc00y"}'),
    5: '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":',  # cut short
}


async def read_message(stdout: BufferedByteReceiveStream) -> dict[str, Any]:
    return dict(json.loads(await stdout.receive_until(b"\n", 1 << 24)))


async def send(process: Process, line: str) -> None:
    assert process.stdin is not None
    await process.stdin.send(line.encode() + b"\n")


async def test_stdio_answers_every_malformed_line(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "memctl", "serve", "--project", str(tmp_path)]
    async with await anyio.open_process(command, env=bridge_env(), stderr=subprocess.DEVNULL) as process:
        assert process.stdout is not None
        stdout = BufferedByteReceiveStream(process.stdout)
        with anyio.fail_after(BOUND_SECONDS):
            await send(process, json.dumps(INITIALIZE))
            assert (await read_message(stdout))["id"] == 1
            await send(process, '{"jsonrpc":"2.0","method":"notifications/initialized"}')
            replies: dict[Any, dict[str, Any]] = {}
            for line in MALFORMED.values():
                await send(process, line)
            await send(process, '{"jsonrpc":"2.0","id":9,"method":"tools/list"}')
            while 9 not in replies:
                message = await read_message(stdout)
                replies[message.get("id")] = message
        for request_id in (2, 3, 4):
            assert replies[request_id]["error"]["code"] == -32700, replies[request_id]
            assert replies[request_id]["error"]["message"].startswith("Parse error")
        assert replies[None]["error"]["code"] == -32700  # the cut-short line: its id is unknowable
        assert replies[9]["result"]["tools"]  # and the bridge serves on
        process.terminate()


def test_http_answers_the_same_lines_with_a_json_rpc_error(tmp_path: Path) -> None:
    with http_bridge(tmp_path) as bridge:
        for line in MALFORMED.values():
            response = httpx.post(bridge.mcp_url, content=line, headers=MCP_HEADERS, timeout=BOUND_SECONDS)
            assert response.status_code == 400
            assert response.json()["error"]["code"] == -32700
