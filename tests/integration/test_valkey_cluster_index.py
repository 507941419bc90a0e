"""The word index of a Valkey Cluster store, against a real three-node cluster.

Each shard keeps its entries' words in the same script as the entries, so after any
sequence of writes, deletes, rollbacks, imports and expiries the indexed answer equals the
scan's; a search answers from the index (it never scans the entries); its answers equal a
single node's on the same data; nothing of the index is left once the entries are gone;
and data in the cluster layout of earlier memctl versions keeps working while it is moved.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from valkey.cluster import ClusterNode, ValkeyCluster

from memory_bridge.stores import EntryFilter
from memory_bridge.stores._query import query_terms
from memory_bridge.stores.valkey import ValkeyEntryStore
from memory_bridge.stores.valkey._keys import SHARDS
from memory_bridge.stores.valkey._rank import count_stats, matches, score, weights

from ..servers import RunningCluster, RunningServer, run_cluster, run_server, valkey_server_binary
from .test_valkey_index import FILTERS, IDS, QUERIES, Clock, fill, operation, page, put, write_of

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RunningCluster]:
    with run_cluster() as running:
        yield running


@pytest.fixture(scope="module")
def single() -> Iterator[RunningServer]:
    with run_server(valkey_server_binary()) as running:
        yield running


def client_of(cluster: RunningCluster) -> ValkeyCluster:
    return ValkeyCluster(startup_nodes=[ClusterNode("127.0.0.1", n.port) for n in cluster.nodes])


def all_keys(cluster: RunningCluster) -> list[str]:
    return sorted(k.decode() for node in cluster.nodes for k in node.client().keys("*"))


async def answers(store: ValkeyEntryStore) -> list[tuple[list[str], int, str]]:
    return [page(await store.search(f, q, offset=0, limit=100)) for f in FILTERS for q in QUERIES]


async def scanned(store: ValkeyEntryStore, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The answers of the scan (what the store does when the index cannot answer)."""

    async def no_index(*args: Any, **kwargs: Any) -> None:
        return None

    with monkeypatch.context() as patch:
        patch.setattr(store, "_indexed", no_index)
        return await answers(store)


def test_searches_answer_from_the_index_as_a_single_node_and_the_scan_do(
    cluster: RunningCluster, single: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.flushall()
    single.client().flushall()

    async def run() -> None:
        clock = Clock()  # the same stamps in both stores
        on_cluster = ValkeyEntryStore(cluster.url, clock=clock)
        on_node = ValkeyEntryStore(single.url, clock=clock)
        try:
            for store in (on_cluster, on_node):
                await fill(store, 400)
                await store.delete("e7")
                await put(store, write_of("e8", [1, 3], ["blue"], "q"))
                await store.rollback("e8", 1)
            indexed = await answers(on_cluster)
            assert any(ids for ids, _, _ in indexed)

            async def no_scan(*args: Any) -> None:
                raise AssertionError("a search scanned the entries")

            with monkeypatch.context() as patch:  # the index answers: no entry is scanned
                patch.setattr(on_cluster, "_scan_ids", no_scan)
                assert await answers(on_cluster) == indexed
            assert indexed == await answers(on_node)
            assert indexed == await scanned(on_cluster, monkeypatch)
            assert await on_cluster.count() == await on_node.count() == 399
        finally:
            await on_cluster.close()
            await on_node.close()

    anyio.run(run)
    shards = {key.partition("}")[0] for key in all_keys(cluster) if key.startswith("{memctl-")}
    assert len(shards) == SHARDS  # a project spreads over every shard
    assert len({n.port for n in cluster.nodes if n.client().dbsize()}) == len(cluster.nodes)


async def apply(store: ValkeyEntryStore, cluster: RunningCluster, clock: Clock, op: tuple[Any, ...]) -> None:
    kind, id = op[0], op[1]
    if kind == "set":
        await put(store, write_of(id, op[2], op[3], op[4]), op[5])
    elif kind == "delete":
        await store.delete(id)
    elif kind == "rollback":
        try:
            await store.rollback(id, op[2])
        except Exception as exc:  # no such version, or nothing to roll back to
            assert "not found" in str(exc).lower()
    elif kind == "expire":  # as if its TTL ran out: gone from Valkey, due in the store's clock
        keys = store._layout(id)
        client = client_of(cluster)
        try:
            if client.zscore(keys.own("memexp"), id) is not None:
                for key in (*keys.entry_keys(id), keys.terms(id)):
                    client.pexpire(key, 1)
                await anyio.sleep(0.005)
                clock.now += 2000
        finally:
            client.close()
    else:  # export one entry and import it back over itself
        async for batch in store.export_records():
            await store.import_records([r for r in batch if r.id == id])


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(operation, max_size=15))
def test_the_index_follows_every_write_and_leaves_nothing_behind(
    cluster: RunningCluster, monkeypatch: pytest.MonkeyPatch, ops: list[Any]
) -> None:
    cluster.flushall()
    clock = Clock()

    async def run() -> None:
        store = ValkeyEntryStore(cluster.url, max_versions=3, clock=clock)
        try:
            assert await store.count() == 0
            for op in ops:
                await apply(store, cluster, clock, op)
            assert await answers(store) == await scanned(store, monkeypatch)  # before the sweep, too
            await store.sweep()
            assert await answers(store) == await scanned(store, monkeypatch)
            for id in IDS:
                await store.delete(id)
            assert await store.count() == 0
        finally:
            await store.close()

    anyio.run(run)
    index = [k for k in all_keys(cluster) if any(f"}}{kind}" in k for kind in ("memw:", "memterms:", "tag:"))]
    assert index == []


def old_layout(cluster: RunningCluster, count: int) -> None:
    """Entries as memctl's earlier cluster layout kept them: `mem:{<id>}`, index sets
    without a hash tag, bookkeeping under `{memctl}`; one with a TTL, one deleted."""
    client = client_of(cluster)
    try:
        for n in range(count):
            id = f"old{n}"
            write = write_of(id, [n % 7, n % 11, n % 13], ["red"], "p")
            fields = {
                "title": write.title,
                "body": write.body,
                "type": "note",
                "tags": "red",
                "source": "test",
                "project": "p",
                "created": "2026-01-01T00:00:00.000000Z",
                "updated": f"2026-01-02T00:00:{n % 60:02d}.000000Z",
                "hits": str(n % 3),
                "ttl": "",
            }
            client.hset(f"mem:{{{id}}}", mapping=fields)
            client.set(f"memrev:{{{id}}}", 2)
            for rev in (1, 2):
                snapshot = {**fields, "tags": ["red"], "operation": "modified", "rev": rev}
                client.lpush(f"memver:{{{id}}}", json.dumps(snapshot))
            for key in ("tag:red", "type:note", "project:p"):
                client.sadd(key, f"mem:{{{id}}}")
        client.expire("mem:{old0}", 3600)
        client.delete("mem:{old1}")  # deleted: its history and revision stay
        client.set("{memctl}:memcount", count - 1)
    finally:
        client.close()


def test_the_old_cluster_layout_keeps_working_while_it_moves(
    cluster: RunningCluster, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.flushall()
    old_layout(cluster, 120)

    async def run() -> None:
        store = ValkeyEntryStore(cluster.url)
        try:
            assert not await store.index_ready()
            assert await store.count() == 119
            before = await answers(store)  # both layouts scanned
            assert any(id.startswith("old") for id in before[0][0])  # unfiltered "alp"
            got = await store.get("old2")  # moved on first touch: revision and hits kept
            assert got is not None and got[1] == 2 and got[0].hits == 3
            outcome = await store.set(
                write_of("old3", [1], ["red"], "p"), ttl=None, if_version=2, operation_id=None
            )
            assert (outcome.status, outcome.revision) == ("applied", 3)
            assert [v["rev"] for v in await store.history("old1", 5)] == [2, 1]
            moved, done = 0, False
            while not done:  # what memctl migrate runs; the bridge writes meanwhile
                batch, done = await store.build_index_step()
                moved += batch
                await put(store, write_of("during", [2], ["red"], "p"))
            assert moved == 120 - 3  # old2 and old3 moved on touch, old1 by history()
            assert await store.index_ready()
            assert await store.count() == 120  # the old entries and `during`
            after = await answers(store)
            assert after == await scanned(store, monkeypatch)
            ttl = await store.export_records().__anext__()
            assert next(r for r in ttl if r.id == "old0").expires_at is not None
            assert caplog.text.count("earlier cluster layout") == 1  # said once, with the cure:
            assert "memctl migrate" in caplog.text
        finally:
            await store.close()

    anyio.run(run)
    left = [k for k in all_keys(cluster) if not k.startswith("{memctl-") and not k.startswith("memop:")]
    assert left == []


def test_the_script_and_the_cluster_rank_by_the_same_statistics_and_scores(
    cluster: RunningCluster, single: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Store-wide statistics: one node's script counts them itself, a cluster adds its
    shards' up and ranks their rows in the bridge, a scan counts them over every entry.
    For every query and filter the three give the same statistics, the same counts per row,
    so the same scores, and the same page in the same order."""
    cluster.flushall()
    single.client().flushall()

    async def run() -> None:
        clock = Clock()
        on_cluster = ValkeyEntryStore(cluster.url, clock=clock)
        on_node = ValkeyEntryStore(single.url, clock=clock)
        try:
            for store in (on_cluster, on_node):
                await fill(store, 300)
                for _ in range(3):
                    await store.get("e4")  # hits break ties
            everything = (await on_node.search(EntryFilter(), None, offset=0, limit=1000)).entries
            for flt in FILTERS:
                for query in QUERIES:
                    terms = query_terms(query)
                    node_rows = await on_node._shard_candidates(flt, terms, 1000, whole=True, store=None)
                    cluster_stats = await on_cluster._store_stats(terms)
                    assert node_rows is not None and cluster_stats is not None
                    node_stats = node_rows[0].stats
                    assert node_stats == cluster_stats == count_stats(everything, terms), query

                    idf = weights(terms, node_stats)
                    script_scores = {c.id: score(c.counts, idf) for c in node_rows[0].candidates}
                    filtered = [e for e in everything if all(t in e.tags for t in flt.tags)]
                    filtered = [e for e in filtered if flt.project in (None, e.project)]
                    python_scores = {c.id: score(c.counts, idf) for c in matches(filtered, terms)}
                    in_mode = {id: s for id, s in python_scores.items() if id in script_scores}
                    assert script_scores == in_mode, (flt, query)  # the same floats, not near ones

                    pages = [
                        page(await store.search(flt, query, offset=0, limit=15))
                        for store in (on_node, on_cluster)
                    ]
                    assert pages[0] == pages[1], (flt, query)
            assert await answers(on_node) == await scanned(on_cluster, monkeypatch)

            for node in cluster.nodes:  # nodes that lost their scripts (restarted): loaded again
                node.client().script_flush()
            loaded: list[str] = []
            load = on_cluster._client.script_load

            async def counted(script: str) -> Any:
                loaded.append(script)
                return await load(script)

            with monkeypatch.context() as patch:
                patch.setattr(on_cluster._client, "script_load", counted)
                assert await answers(on_cluster) == await answers(on_node)
            assert loaded  # by the pipelines that send a search's shard calls
        finally:
            await on_cluster.close()
            await on_node.close()

    anyio.run(run)
