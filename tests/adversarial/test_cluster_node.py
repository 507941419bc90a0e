"""A Valkey Cluster node killed under an open stdio session, then started again.

Every call answers (live slots serve, dead slots say why), the bridge process lives on
through its background sweeps, and the node's return is picked up without a restart.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ..bridges import free_port, stdio_params
from ..servers import RunningCluster, run_cluster, run_server, valkey_server_binary
from .judge import BOUND_SECONDS, assert_has_reason

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

NOTE = {"title": "t", "body": "b", "type": "note", "tags": ["x"], "project": "p"}
IDS = [f"entry-{n}" for n in range(24)]  # spread over every node's slots


def wait_until_formed(cluster: RunningCluster) -> None:
    deadline = time.monotonic() + 30
    while any(node.client().cluster("INFO").get("cluster_state") != "ok" for node in cluster.nodes):
        assert time.monotonic() < deadline, "the cluster did not form again"
        time.sleep(0.1)


async def call(client: Client, name: str, args: dict[str, Any]) -> Any:
    """A call that must be answered; a closed connection means the bridge died."""
    with anyio.fail_after(BOUND_SECONDS):
        return await client.call_tool(name, args)


async def test_a_node_dies_and_returns_under_an_open_session(tmp_path: Path) -> None:
    # Without full coverage required, the live nodes go on serving their slots (the default
    # makes the whole cluster refuse every command once a node is marked failed).
    with run_cluster(3, "--cluster-require-full-coverage", "no") as cluster:
        params = stdio_params(tmp_path, MEMCTL_ENTRY_STORE=cluster.url, MEMCTL_SWEEP_INTERVAL_SECONDS="0.2")
        async with Client(params, mode="legacy") as client:
            for id in IDS:
                assert not (await call(client, "memory_set", {"id": id, **NOTE})).is_error
            victim = cluster.nodes[1]
            victim.kill()
            answers = []
            for _ in range(3):  # several rounds: the client's view of the cluster changes meanwhile
                for id in IDS:
                    answers.append(await call(client, "memory_get", {"id": id}))
                await anyio.sleep(0.5)  # sweeps run against the broken cluster meanwhile
            answers.append(await call(client, "memory_list", {}))
            answers.append(await call(client, "memory_set", {"id": "during", **NOTE}))
            for answer in answers:
                if answer.is_error:
                    assert_has_reason(answer.content[0].text)
            served = [a for a in answers[-len(IDS) - 2 : -2] if not a.is_error]
            assert served, "live slots kept serving"  # in the last round, long after the failure

            victim.restart()
            wait_until_formed(cluster)
            deadline = time.monotonic() + BOUND_SECONDS
            while True:  # the client finds the node again by itself; no bridge restart
                back = [await call(client, "memory_set", {"id": id, **NOTE}) for id in IDS]
                if not any(a.is_error for a in back):
                    break
                assert time.monotonic() < deadline, back[0].content[0].text
                await anyio.sleep(0.5)
            for id in IDS:
                got = await call(client, "memory_get", {"id": id})
                assert json.loads(got.content[0].text)["id"] == id


async def test_a_cluster_that_was_never_formed_says_so(tmp_path: Path) -> None:
    """A node in cluster mode that owns no slot: every call answers why, nothing crashes."""
    config = tmp_path / "nodes.conf"
    cluster_port = str(free_port())
    with run_server(
        valkey_server_binary(),
        *("--cluster-enabled", "yes", "--cluster-config-file", str(config), "--cluster-port", cluster_port),
    ) as node:
        url = f"valkey+cluster://127.0.0.1:{node.port}"
        (tmp_path / "project").mkdir()
        async with Client(
            stdio_params(tmp_path / "project", MEMCTL_ENTRY_STORE=url), mode="legacy"
        ) as client:
            for name, args in [
                ("memory_get", {"id": "a"}),
                ("memory_set", {"id": "a", **NOTE}),
                ("memory_list", {}),
            ]:
                answer = await call(client, name, args)
                assert answer.is_error, name
                assert_has_reason(answer.content[0].text)
                assert "Valkey" in answer.content[0].text, answer.content[0].text
