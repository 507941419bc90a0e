"""A Valkey that hangs (SIGSTOP), single node or one cluster node: bulk calls fail for the
same reason and within the same per-answer deadline as single-key calls, a write says its
outcome is unknown, and after SIGCONT a retry with the same operation_id settles it."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ..bridges import HttpBridge, http_bridge
from ..servers import RunningServer, run_cluster, run_server, valkey_server_binary
from .judge import BOUND_SECONDS, assert_has_reason

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

NOTE = {"title": "t", "body": "b", "type": "note", "tags": ["x"], "project": "p"}
LATE = "did not answer within 2 s"  # the per-answer deadline, the same for every call
"""Before, a bulk call ran under a 120 s deadline and failed only through socket timeouts
and retries (with another reason, and later than a single-key call)."""


@pytest.fixture(params=["single", "cluster"])
def stopped(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[RunningServer, HttpBridge]]:
    """A bridge on Valkey and the server to stop (for a cluster, one of its nodes)."""
    with ExitStack() as stack:
        if request.param == "single":
            server = stack.enter_context(run_server(valkey_server_binary()))
            url, victim = server.url, server
        else:
            cluster = stack.enter_context(run_cluster(3, "--cluster-require-full-coverage", "no"))
            url, victim = cluster.url, cluster.nodes[1]
        bridge = stack.enter_context(http_bridge(tmp_path, "--entry-store", url))
        try:
            yield victim, bridge
        finally:
            os.kill(victim.process.pid, signal.SIGCONT)  # a stopped server cannot be terminated


def text(result: Any) -> str:
    return str(result.content[0].text)


async def first_failure(client: Client, calls: list[tuple[str, dict[str, Any]]]) -> tuple[int, str]:
    """Make the calls in turn until one fails (on a cluster, the first on the stopped node)."""
    for index, (name, args) in enumerate(calls):
        with anyio.fail_after(BOUND_SECONDS):
            result = await client.call_tool(name, args)
        if result.is_error:
            assert_has_reason(text(result))
            return index, text(result)
    raise AssertionError("no call reached the stopped server")


async def test_every_call_fails_alike_and_a_write_says_its_outcome_is_unknown(
    stopped: tuple[RunningServer, HttpBridge],
) -> None:
    victim, bridge = stopped
    async with Client(bridge.mcp_url, mode="legacy") as client:
        for n in range(30):
            assert not (await client.call_tool("memory_set", {"id": f"e{n}", **NOTE})).is_error
        os.kill(victim.process.pid, signal.SIGSTOP)

        _, single = await first_failure(client, [("memory_get", {"id": f"e{n}"}) for n in range(30)])
        assert LATE in single, single
        for name, args in [
            ("memory_list", {}),
            ("memory_search", {"query": "t"}),
            ("memory_prune_candidates", {}),
        ]:
            with anyio.fail_after(BOUND_SECONDS):
                bulk = await client.call_tool(name, args)
            assert bulk.is_error and LATE in text(bulk), (name, text(bulk))
        writes = [("memory_set", {"id": f"late{n}", **NOTE, "operation_id": f"op-{n}"}) for n in range(30)]
        failed, write = await first_failure(client, writes)
        assert "unknown" in write and "same operation_id" in write, write

        os.kill(victim.process.pid, signal.SIGCONT)
        deadline = time.monotonic() + BOUND_SECONDS
        while (again := await client.call_tool(*writes[failed])).is_error:  # a cluster heals first
            assert time.monotonic() < deadline, text(again)
            await anyio.sleep(0.2)
        history = json.loads(text(await client.call_tool("memory_history", {"id": f"late{failed}"})))
        assert len(history["versions"]) == 1  # applied once, by the first try or by the retry
