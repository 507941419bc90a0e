"""The search script's top-k cut against a real single node and a three-node cluster.

The script scores the matches and returns only the rows that can be on the page; the
bridge orders those. Whatever the entries, hits, update times, query, tags, offset and
limit, the page, its total and its `match` equal the full ranking's (the scan's: what
the store does without the index), ties and prefix terms included, and the script sends
no more rows than the page needs when nothing ties with its last row.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memory_bridge.stores import EntryFilter, EntryWrite
from memory_bridge.stores.valkey import ValkeyEntryStore

from ..servers import RunningCluster, RunningServer, run_cluster, run_server, valkey_server_binary
from .test_valkey_index import Clock, page, put

pytestmark = [pytest.mark.integration]

# Few words, so entries often share counts (equal scores); prefixes of each other, so a
# term matches several words; ids whose byte order differs from a locale's collation.
WORDS = ["al", "alp", "alpha", "alphabet", "beta", "Beta", "go", "gopher", "ΟΔΟΣ", "naïve", "x_y", "42"]
IDS = [
    f"{stem}{end}"
    for stem in ("a", "B", "b-", "Δ", "É", "z", "a b", "é")
    for end in ("", "1", "-x", "Z", "ü", "0")
]
TAGS = ["red", "blue"]


# A server whose collation is not byte order (Valkey sets LC_COLLATE from its environment):
# the script then compares ids and update times byte by byte itself.
COLLATING_LOCALE = "en_US.UTF-8"


def collating_server() -> Iterator[RunningServer]:
    listed = subprocess.run(["locale", "-a"], capture_output=True, text=True, check=False).stdout.split()
    if "en_US.utf8" not in listed:
        reason = f"the {COLLATING_LOCALE} locale is not generated (localedef -i en_US -f UTF-8 en_US.UTF-8)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; scripts/test generates it in CI")
        pytest.skip(reason)
    with run_server(valkey_server_binary(), env={"LC_ALL": COLLATING_LOCALE}) as server:
        # the byte-order shortcut's own test, as the script makes it: false here
        assert server.client().eval("return ('B' < 'a') and 1 or 0", 0) == 0
        yield server


@pytest.fixture(scope="module", params=["valkey", "valkey-cluster", "valkey-en_US"])
def layout(request: pytest.FixtureRequest) -> Iterator[RunningServer | RunningCluster]:
    if request.param == "valkey":
        with run_server(valkey_server_binary()) as server:
            yield server
    elif request.param == "valkey-en_US":
        yield from collating_server()
    else:
        with run_cluster() as cluster:
            yield cluster


def flush(layout: RunningServer | RunningCluster) -> None:
    if isinstance(layout, RunningCluster):
        layout.flushall()
    else:
        layout.client().flushall()


WEIGHTS = [1 / (rank + 1) for rank in range(len(WORDS))]  # a few words are everywhere
QUERY_WORDS = [*WORDS, "alph", "al", "alp", "b", "be", "zz"]
FILTERS = [(), ("red",), ("red", "blue")]


async def random_store(store: ValkeyEntryStore, clock: Clock, rnd: random.Random) -> None:
    """10-48 entries of 0-2 title and 0-3 body words, tags, 0-2 reads each; half of them
    written at the same time as the one before; some with a TTL, of which about half have
    expired (gone from Valkey, not swept yet)."""
    expiring = []
    for id in rnd.sample(IDS, rnd.randint(10, len(IDS))):
        if rnd.random() < 0.5:
            clock.now += 1
        title = " ".join(rnd.choices(WORDS, WEIGHTS, k=rnd.randint(0, 2))) or "untitled"
        body = " ".join(rnd.choices(WORDS, WEIGHTS, k=rnd.randint(0, 3)))
        ttl = 1000 if rnd.random() < 0.2 else None
        await put(store, EntryWrite(id, title, body, "note", tuple(rnd.sample(TAGS, rnd.randint(0, 2)))), ttl)
        for _ in range(rnd.choice((0, 0, 1, 2))):
            await store.get(id)
        if ttl and rnd.random() < 0.5:
            expiring.append(id)
    for id in expiring:  # as if its TTL ran out: its keys gone, due in the store's clock
        keys = store._layout(id)
        for key in (*keys.entry_keys(id), keys.terms(id)):
            await store._client.pexpire(key, 1)
    if expiring:
        await anyio.sleep(0.005)
        clock.now += 2000


async def no_scan(*args: Any) -> None:
    raise AssertionError("the index did not answer")


async def no_index(*args: Any) -> None:
    return None


@settings(
    max_examples=20,
    phases=[Phase.explicit, Phase.generate],  # a failure shows its store's seed: no slow shrinking
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.randoms(use_true_random=False))
def test_the_cut_search_equals_the_full_ranking(
    layout: RunningServer | RunningCluster, monkeypatch: pytest.MonkeyPatch, rnd: random.Random
) -> None:
    flush(layout)
    clock = Clock()

    async def run() -> None:
        store = ValkeyEntryStore(layout.url, clock=clock)
        try:
            await random_store(store, clock, rnd)
            for _ in range(12):
                text = " ".join(rnd.choices(QUERY_WORDS, k=rnd.choice((1, 1, 2, 3))))
                flt = EntryFilter(tags=rnd.choice(FILTERS))
                offset, limit = rnd.randint(0, 5), rnd.randint(1, 4)
                with monkeypatch.context() as patch:
                    patch.setattr(store, "_candidates", no_scan)
                    cut = await store.search(flt, text, offset=offset, limit=limit)
                with monkeypatch.context() as patch:
                    patch.setattr(store, "_indexed", no_index)
                    full = await store.search(flt, text, offset=offset, limit=limit)
                assert page(cut) == page(full), (text, flt, offset, limit)
                assert cut.entries == full.entries  # whole, also where the script sent them
        finally:
            await store.close()

    anyio.run(run)


async def pages(store: ValkeyEntryStore, term: str) -> list[tuple[list[str], int, str]]:
    """Every page of three."""
    return [page(await store.search(EntryFilter(), term, offset=o, limit=3)) for o in range(0, 60, 3)]


def test_the_script_returns_only_what_the_page_needs(
    layout: RunningServer | RunningCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Distinct scores: no more rows than offset + limit per shard. Equal scores (the same
    counts): still the page's rows, chosen by hits, update time and id as the scan does."""
    flush(layout)
    clock = Clock()

    async def run() -> None:
        store = ValkeyEntryStore(layout.url, clock=clock)
        try:
            for n in range(60):  # "alpha" n + 1 times in the body: every score differs
                clock.now += 1 - n % 2  # pairs of tied entries share an update time and hits
                await put(store, EntryWrite(f"d{n}", "doc", " ".join(["alpha"] * (n + 1)), "note", ()))
                await put(store, EntryWrite(f"t{59 - n}", "tied", "beta", "note", ()))
                for _ in range(n // 2 % 3):
                    await store.get(f"t{59 - n}")
            for term in ("alpha", "beta"):
                ranked = await store._shard_candidates(EntryFilter(), [term], 5, whole=False, store=None)
                assert ranked is not None and all(len(r.candidates) <= 5 for r in ranked)
                assert sum(r.matched for r in ranked) == 60
                cut = await pages(store, term)
                with monkeypatch.context() as patch:
                    patch.setattr(store, "_indexed", no_index)
                    assert cut == await pages(store, term)
                assert len({id for ids, _, _ in cut for id in ids}) == 60
        finally:
            await store.close()

    anyio.run(run)
