"""The Valkey store's word index against a real server: kept exact by every write, built
for old data by a resumable step, and answering `memory_search` as the scan does.

"Exact" means the index after any sequence of writes, deletes, rollbacks, imports and
expiries (followed by the sweep) equals the one a build from scratch makes of the same
data; searches are compared with the scan's on the same data (the scan is what the store
does while `memidx` is not `ready`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_bridge.stores import Entry, EntryFilter, EntryPage, EntryRecord, EntryWrite
from memory_bridge.stores.valkey import ValkeyEntryStore

from ..servers import RunningServer, redis_server_binary, run_server, valkey_server_binary

pytestmark = [pytest.mark.integration]

WORDS = ["alpha", "Alphabet", "al", "go", "gopher", "Ünïcode", "naïve", "x_y", "42", "tok-en", "ΟΔΟΣ", "!!"]
QUERIES = ["alp", "al", "go gopher", "üni", "tok", "ΟΔΟΣ", "naïve alpha", "x_y", "4", "e", "zz", "alpha zz"]
FILTERS = [
    EntryFilter(),
    EntryFilter(tags=("red",)),
    EntryFilter(tags=("red", "blue")),
    EntryFilter(project="p"),
]
IDS = ["a", "b", "c-1", "Δ"]


@pytest.fixture(scope="module", params=["valkey", "redis7"])
def server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    binary = valkey_server_binary() if request.param == "valkey" else redis_server_binary()
    if binary is None:
        pytest.skip("redis-server (Debian's redis 7) is not installed")
    with run_server(binary) as running:
        yield running


@dataclass
class Clock:
    now: float = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def index_keys(server: RunningServer) -> dict[str, Any]:
    """Every key of the word index, as plain data."""
    client = server.client()
    found: dict[str, Any] = {"vocab": sorted(client.zrange("memvocab", 0, -1))}
    for key in client.scan_iter(match="memw:*"):
        found[key.decode()] = client.hgetall(key)
    for key in client.scan_iter(match="memterms:*"):
        found[key.decode()] = sorted((client.get(key) or b"").split())
    return found


def strip_index(server: RunningServer) -> None:
    """Leave the data as a memctl without the word index wrote it."""
    client = server.client()
    for pattern in ("memw:*", "memterms:*"):
        for key in client.scan_iter(match=pattern):
            client.delete(key)
    client.delete("memvocab", "memidx", "memidxscan")


async def build(store: ValkeyEntryStore) -> int:
    indexed, done = 0, False
    while not done:
        batch, done = await store.build_index_step()
        indexed += batch
    return indexed


def page(found: EntryPage) -> tuple[list[str], int, str]:
    return [e.id for e in found.entries], found.total, found.match


async def both_ways(store: ValkeyEntryStore, server: RunningServer) -> list[tuple[Any, Any]]:
    """(index answer, scan answer) of every query under every filter."""
    client = server.client()
    answers = []
    for flt in FILTERS:
        for query in QUERIES:
            indexed = page(await store.search(flt, query, offset=0, limit=100))
            client.rename("memidx", "memidx-off")
            try:
                scanned = page(await store.search(flt, query, offset=0, limit=100))
            finally:
                client.rename("memidx-off", "memidx")
            answers.append((indexed, scanned))
    return answers


def write_of(id: str, words: list[int], tags: list[str], project: str) -> EntryWrite:
    text = [WORDS[w % len(WORDS)] for w in words]
    return EntryWrite(
        id=id,
        title=" ".join(text[:2]) or "untitled",
        body=" ".join(text[2:]),
        type="note",
        tags=tuple(tags),
        project=project,
    )


operation = st.one_of(
    st.tuples(
        st.just("set"),
        st.sampled_from(IDS),
        st.lists(st.integers(0, 50), max_size=6),
        st.lists(st.sampled_from(["red", "blue", "ΟΔΟΣ"]), max_size=2, unique=True),
        st.sampled_from(["p", "q"]),
        st.sampled_from([None, 1000]),
    ),
    st.tuples(st.just("delete"), st.sampled_from(IDS)),
    st.tuples(st.just("rollback"), st.sampled_from(IDS), st.integers(0, 2)),
    st.tuples(st.just("expire"), st.sampled_from(IDS)),
    st.tuples(st.just("reimport"), st.sampled_from(IDS)),
)


async def put(store: ValkeyEntryStore, write: EntryWrite, ttl: int | None = None) -> None:
    await store.set(write, ttl=ttl, if_version=None, operation_id=None)


async def apply(store: ValkeyEntryStore, server: RunningServer, clock: Clock, op: tuple[Any, ...]) -> None:
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
        client = server.client()
        if client.zscore("memexp", id) is not None:
            for key in (f"mem:{id}", f"memver:{id}", f"memrev:{id}", f"memterms:{id}"):
                client.pexpire(key, 1)
            await anyio.sleep(0.005)
            clock.now += 2000
    else:  # export one entry and import it back over itself
        async for batch in store.export_records():
            await store.import_records([r for r in batch if r.id == id])


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(operation, max_size=20))
def test_the_index_after_any_writes_equals_a_rebuild(server: RunningServer, ops: list[Any]) -> None:
    server.client().flushall()
    clock = Clock()

    async def run() -> None:
        store = ValkeyEntryStore(server.url, max_versions=3, clock=clock)
        try:
            assert await store.count() == 0  # a fresh store: its (empty) index is ready at once
            for op in ops:
                await apply(store, server, clock, op)
                assert server.client().get("memidx") == b"ready"
            for indexed, scanned in await both_ways(store, server):  # before the sweep, too
                assert indexed == scanned
            await store.sweep()
            kept = index_keys(server)
            strip_index(server)
            await build(store)
            assert index_keys(server) == kept
        finally:
            await store.close()

    anyio.run(run)


async def fill(store: ValkeyEntryStore, count: int) -> None:
    for n in range(count):
        words = [n % 7, n % 11, n % 13, n % 17]
        tags = ["red"] if n % 3 else ["red", "blue"]
        await put(store, write_of(f"e{n}", words, tags, "pq"[n % 2]))


def test_search_scans_until_the_index_is_built_and_a_build_resumes(server: RunningServer) -> None:
    server.client().flushall()

    async def run() -> None:
        store = ValkeyEntryStore(server.url)
        try:
            await fill(store, 1200)
            full = index_keys(server)
            before = await both_ways(store, server)
            strip_index(server)
            assert not await store.index_ready()
            unbuilt = [page(await store.search(f, q, offset=0, limit=100)) for f in FILTERS for q in QUERIES]
            assert unbuilt == [scanned for _, scanned in before]  # the scan answers meanwhile

            indexed, done = await store.build_index_step()  # part of the keys
            assert not done and 0 < indexed < 1200
            assert not await store.index_ready()
            # writes go on while the index is built: they index themselves
            await put(store, write_of("e5", [1, 2], ["blue"], "p"))
            await put(store, write_of("new", [3], ["red"], "q"))
            await store.delete("e6")
        finally:
            await store.close()
        resumed = ValkeyEntryStore(server.url)  # a later run picks up at the saved cursor
        try:
            rest = await build(resumed)
            assert indexed + rest < 1200 + 1  # nothing indexed twice
            assert await resumed.index_ready()
            assert await build(resumed) == 0  # idempotent
            after = index_keys(server)
            strip_index(server)
            await build(resumed)
            assert index_keys(server) == after
            for indexed_answer, scanned in await both_ways(resumed, server):
                assert indexed_answer == scanned
        finally:
            await resumed.close()
        assert full != after  # the writes during the build moved it

    anyio.run(run)


def test_a_word_in_25000_entries_is_searched_by_the_index_as_the_scan_ranks_it(server: RunningServer) -> None:
    """A common word of a large store (a fifth of 100,000 entries) is answered by the
    script, not by fetching every entry into the bridge: same page, total and match."""
    server.client().flushall()

    def record(n: int) -> EntryRecord:
        stamp = f"2026-01-01T00:00:{n % 60:02d}.000Z"
        body = " ".join(["common"] * (1 + n % 4) + [WORDS[n % 7]])
        title = "common note" if n % 997 == 0 else f"note {n % 13}"
        entry = Entry(f"e{n}", title, body, "note", ("red",), "test", "p", stamp, stamp, n % 5, "")
        return EntryRecord(f"e{n}", entry, 1, ())

    async def run() -> None:
        store = ValkeyEntryStore(server.url)
        try:
            await store.import_records([record(n) for n in range(25_000)])
            assert (
                await store._shard_candidates(EntryFilter(), ["common"], 10, whole=True, store=None)
                is not None
            )
            for query in ("common", "common alpha", "comm"):
                indexed = page(await store.search(EntryFilter(), query, offset=5, limit=20))
                server.client().rename("memidx", "memidx-off")
                try:
                    scanned = page(await store.search(EntryFilter(), query, offset=5, limit=20))
                finally:
                    server.client().rename("memidx-off", "memidx")
                assert indexed == scanned
                assert indexed[1] >= 3_000
        finally:
            await store.close()

    anyio.run(run)


def test_a_query_matching_too_much_for_one_script_scans(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.client().flushall()

    async def run() -> None:
        store = ValkeyEntryStore(server.url)
        try:
            await fill(store, 300)
            before = await both_ways(store, server)
            monkeypatch.setattr("memory_bridge.stores.valkey._index.MAX_VISITS", 5)
            assert (
                await store._shard_candidates(EntryFilter(), ["alpha"], 10, whole=True, store=None) is None
            )  # too many
            assert await both_ways(store, server) == before
        finally:
            await store.close()

    anyio.run(run)
