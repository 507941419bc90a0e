"""Versioned entries on Valkey (or any Redis-compatible server), memory-mcp's key layout.

Every mutation and the counting get are one Lua script (see `_scripts`). Reads that
cover many entries gather ids from the index sets (or SCAN when unfiltered) and fetch
the hashes in pipelined batches, never one round trip per key. With a
`valkey+cluster://` URL the same store runs on Valkey Cluster, in shards (see `_keys`):
a call about one entry goes to its shard, a call over many to every shard at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio

from ..._errors import NotFound, StoreError, StoreUnavailable
from .._base import (
    DeleteOutcome,
    Entry,
    EntryFilter,
    EntryPage,
    EntryRecord,
    EntryWrite,
    RollbackOutcome,
    SetOutcome,
    SortOrder,
)
from .._clock import format_instant
from .._query import query_terms
from ._calls import run_all
from ._errors import client_retry, map_valkey_errors
from ._index import IndexState, Ranking, WordIndex, add_up, ranking_of, snapshot_words, stats_of
from ._keys import KeyLayout, LegacyClusterKeys, shard_layouts, shard_of, shards_pattern
from ._legacy import LegacyMover
from ._rank import Stats, count_stats, entry_terms, order, rank
from ._replies import hash_fields
from ._scripts import DELETE, EXPORT, FETCH, GET, IMPORT, OP_RESERVE, SEARCH, STATS, SWEEP, UPGRADE, WRITE
from ._url import ValkeyTarget, parse_valkey_url

__all__ = ["ValkeyEntryStore"]

log = logging.getLogger("memctl.valkey")

T = TypeVar("T")
CALL_TIMEOUT_SECONDS = 2.0  # a server silent for this long is an outage, whatever the call
# Calls over many entries (search, list, prune, export, import) may take longer on a large
# store, as long as the server keeps answering: each answer moves their deadline on by
# CALL_TIMEOUT_SECONDS, up to this in all.
BULK_TIMEOUT_SECONDS = 120.0
_WRITES = frozenset({"memory_set", "memory_delete", "memory_rollback", "import"})
_PROGRESS_STEP = 0.1  # seconds between two moves of a bulk call's deadline
_BATCH = 500
_ROUND_TRIP = 100  # entries per export or import round trip: each must answer within the deadline
_PENDING_OPERATION_SECONDS = 30


_bulk_deadline: ContextVar[tuple[anyio.CancelScope, float] | None] = ContextVar(
    "memctl_valkey_bulk_deadline", default=None
)


def _progress() -> None:
    """The server answered: give the running bulk call (if any) another CALL_TIMEOUT_SECONDS."""
    current = _bulk_deadline.get()
    if current is None:
        return
    scope, limit = current
    moved = min(limit, anyio.current_time() + CALL_TIMEOUT_SECONDS)
    if moved - scope.deadline >= _PROGRESS_STEP:
        scope.deadline = moved


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else value


def _entry(id: str, fields: dict[str, str]) -> Entry:
    return Entry(
        id=id,
        title=fields["title"],
        body=fields.get("body", ""),
        type=fields.get("type", ""),
        tags=tuple(t for t in fields.get("tags", "").split(",") if t),
        source=fields.get("source", "unknown"),
        project=fields.get("project", ""),
        created=fields.get("created", ""),
        updated=fields.get("updated", ""),
        hits=int(fields.get("hits") or 0),
        ttl=fields.get("ttl", ""),
    )


def _desc(text: str) -> tuple[int, ...]:
    return (*(-ord(c) for c in text), 0)


_SORT_KEYS: dict[str, Callable[[Entry], Any]] = {
    "hits": lambda e: (-e.hits, _desc(e.updated), e.id),
    "updated": lambda e: (_desc(e.updated), e.id),
}


def _matches(entry: Entry, flt: EntryFilter) -> bool:
    """Re-check a candidate against the filter (index sets are only a first cut)."""
    return (
        all(tag in entry.tags for tag in flt.tags)
        and (flt.type is None or entry.type == flt.type)
        and (flt.project is None or entry.project == flt.project)
    )


def _connect(target: ValkeyTarget) -> Any:
    """A client for the target; valkey-py is imported here, on first use, because importing
    it takes about half a second and a stdio bridge must start fast."""
    import valkey.asyncio as valkey_async
    from valkey.asyncio.cluster import ClusterNode, ValkeyCluster
    from valkey.exceptions import ConnectionError as ValkeyConnectionError
    from valkey.exceptions import TimeoutError as ValkeyTimeoutError

    options: dict[str, Any] = {
        "username": target.username,
        "password": target.password,
        "ssl": target.tls,
        "ssl_ca_certs": target.ca_file,
        "socket_timeout": CALL_TIMEOUT_SECONDS * 0.75,
        "socket_connect_timeout": CALL_TIMEOUT_SECONDS * 0.5,
        "retry": client_retry(),
        "decode_responses": True,
    }
    if target.cluster:
        nodes = [ClusterNode(host, port) for host, port in target.nodes]
        return ValkeyCluster(startup_nodes=nodes, **options)
    return valkey_async.Valkey(
        host=target.host,
        port=target.port,
        db=target.db,
        health_check_interval=30,
        retry_on_error=[ValkeyConnectionError, ValkeyTimeoutError],
        **options,
    )


class ValkeyEntryStore:
    """The server entry store: shared by every bridge of a team."""

    def __init__(
        self,
        url: str,
        *,
        max_versions: int = 20,
        operation_ttl: int = 604_800,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.target: ValkeyTarget = parse_valkey_url(url)
        self.url = self.target.safe_url
        self._cluster = self.target.cluster
        self._layouts = shard_layouts(self.target.prefix, self._cluster)
        self._legacy_keys = LegacyClusterKeys(self.target.prefix)
        self._max_versions = max_versions
        self._operation_ttl = operation_ttl
        self._clock = clock
        self._client: Any = None  # connected on first use (see _connect)
        self._hits_zero: tuple[float, int] | None = None
        self._count_ready = False
        self._legacy = self._cluster  # data in the old cluster layout may be there: checked on first use
        self._legacy_told = False

    def _connected(self) -> None:
        if self._client is not None:
            return
        self._client = _connect(self.target)
        self._write = self._client.register_script(WRITE)
        self._delete = self._client.register_script(DELETE)
        self._get = self._client.register_script(GET)
        self._sweep = self._client.register_script(SWEEP)
        self._import = self._client.register_script(IMPORT)
        self._op_reserve = self._client.register_script(OP_RESERVE)
        self._fetch_many = self._client.register_script(FETCH)
        self._upgrade = self._client.register_script(UPGRADE)
        self._export_many = self._client.register_script(EXPORT)
        self._search = self._client.register_script(SEARCH)
        self._stats = self._client.register_script(STATS)
        self._indexes = [WordIndex(self._client, keys, self._clock, _progress) for keys in self._layouts]
        self._mover = LegacyMover(self._client, self._legacy_keys, self._import, self._layout, _progress)

    def _layout(self, id: str) -> KeyLayout:
        """The keyspace (on a cluster, the shard) an entry lives in."""
        return self._layouts[shard_of(id, len(self._layouts))]

    def _meta(self, name: str) -> str:
        """A store-wide key (memschema): in the one keyspace, or a cluster's `{memctl}` slot."""
        return self._legacy_keys.own(name) if self._cluster else self._layouts[0].own(name)

    def _by_shard(self, ids: Iterable[str]) -> dict[int, list[str]]:
        groups: dict[int, list[str]] = {}
        for id in ids:
            groups.setdefault(shard_of(id, len(self._layouts)), []).append(id)
        return groups

    # -- plumbing ---------------------------------------------------------------------------

    @asynccontextmanager
    async def _call(self, operation: str, *, bulk: bool = False) -> AsyncIterator[None]:
        """A deadline of CALL_TIMEOUT_SECONDS; a bulk call's moves on with each answer."""
        self._connected()
        write = operation in _WRITES
        try:
            with map_valkey_errors(operation, self.url, CALL_TIMEOUT_SECONDS, write=write):
                with anyio.fail_after(CALL_TIMEOUT_SECONDS) as scope:
                    limit = scope.deadline + BULK_TIMEOUT_SECONDS - CALL_TIMEOUT_SECONDS
                    token = _bulk_deadline.set((scope, limit) if bulk else None)
                    try:
                        yield
                    finally:
                        _bulk_deadline.reset(token)
        except StoreUnavailable:
            if self._cluster:
                await self._drop_client()
            raise

    async def _drop_client(self) -> None:
        """Forget a cluster client after an outage: the next call starts afresh from every
        configured node. (The client drops each node that fails it from its own list, so
        after a node failure it could end with none and never find the node's return.)"""
        client, self._client = self._client, None
        if client is None:  # another call dropped it first
            return
        with (
            suppress(StoreError),
            anyio.move_on_after(CALL_TIMEOUT_SECONDS),
            map_valkey_errors("close", self.url, CALL_TIMEOUT_SECONDS),
        ):
            await client.aclose()

    async def _run(
        self, operation: str, work: Callable[[], Awaitable[T]], *, bulk: bool = False, id: str | None = None
    ) -> T:
        """Run `work` within the call's deadline. While a cluster holds entries in the old
        layout, the entry `id` names is moved first, so the call finds it where it works."""
        if not self._count_ready:
            async with self._call("count", bulk=True):
                await self._ensure_count()
        async with self._call(operation, bulk=bulk):
            if self._legacy:
                self._legacy = await self._mover.pending()
                if self._legacy and not self._legacy_told:
                    self._legacy_told = True
                    log.warning(
                        "%s holds entries in memctl's earlier cluster layout: each moves when it is"
                        " used, searches scan every entry until `memctl migrate` has moved the rest",
                        self.url,
                    )
                if self._legacy and id is not None:
                    await self._mover.move([id])
            return await work()

    async def _ensure_count(self) -> None:
        """Seed `memcount` once: for data written by memory-mcp (which keeps no count), by
        counting; a cluster's shards hold only what memctl wrote (which counted itself)."""
        if self._cluster:
            pipe = self._client.pipeline(transaction=False)
            for keys in self._layouts:
                pipe.set(keys.own("memcount"), 0, nx=True)
                pipe.set(keys.own("memidx"), IndexState.READY, nx=True)
            await pipe.execute()
            self._count_ready = True
            return
        keys = self._layouts[0]
        count_key = keys.own("memcount")
        if await self._client.exists(count_key):
            self._count_ready = True
            return
        live = 0
        async for batch in self._scan_ids("mem:"):
            live += len(await self._fetch(batch))
        if live == 0:  # nothing to index: every entry to come indexes itself
            await self._client.set(keys.own("memidx"), IndexState.READY, nx=True)
        await self._client.set(count_key, live, nx=True)
        self._count_ready = True

    async def _scan_ids(self, kind: str) -> AsyncIterator[list[str]]:
        """Ids of every key of one kind (mem:, memver:, memrev:), in batches; on a cluster,
        of every shard (all shard prefixes have the same length)."""
        keys = self._layouts[0]
        pattern = shards_pattern(self.target.prefix, kind) if self._cluster else keys.pattern(kind)
        batch: list[str] = []
        async for key in self._client.scan_iter(match=pattern, count=1000):
            _progress()
            batch.append(keys.id_of_key(kind, _text(key)))
            if len(batch) >= 1000:
                yield batch
                batch = []
        if batch:
            yield batch

    async def _per_shard(self, ids: Iterable[str], script: Any, chunk_size: int) -> dict[str, Any]:
        """id -> its reply from `script` (FETCH or EXPORT), run over each shard's ids in
        chunks, the shards at once (in one pipeline when each shard's ids are one chunk)."""

        async def one_shard(shard: int, shard_ids: list[str]) -> list[tuple[str, Any]]:
            keys = self._layouts[shard]
            found: list[tuple[str, Any]] = []
            for start in range(0, len(shard_ids), chunk_size):
                chunk = shard_ids[start : start + chunk_size]
                replies = await script(keys=[keys.own("memcount")], args=[keys.prefix, *chunk])
                _progress()
                found += zip(chunk, replies, strict=True)
            return found

        groups = self._by_shard(ids)
        if all(len(group) <= chunk_size for group in groups.values()):  # a page: one round trip
            calls = [
                ([self._layouts[shard].own("memcount")], [self._layouts[shard].prefix, *group])
                for shard, group in groups.items()
            ]
            replies = await run_all(self._client, script, calls) if calls else []
            _progress()
            return {
                id: reply
                for group, shard_replies in zip(groups.values(), replies, strict=True)
                for id, reply in zip(group, shard_replies, strict=True)
            }
        done = await asyncio.gather(*(one_shard(shard, group) for shard, group in groups.items()))
        return {id: reply for shard in done for id, reply in shard}

    async def _fetch(self, ids: Iterable[str]) -> list[Entry]:
        """The entries of `ids`, in that order, read in batches; skip ids whose hash is gone."""
        ids = list(ids)
        replies = await self._per_shard(ids, self._fetch_many, _BATCH)
        entries = []
        for id in ids:
            fields = hash_fields(replies[id])
            if "title" in fields:
                entries.append(_entry(id, fields))
        return entries

    async def _candidates(self, flt: EntryFilter) -> list[Entry]:
        if not self._filter_sets(flt, self._layouts[0]) or self._legacy:
            entries: list[Entry] = []
            async for batch in self._scan_ids("mem:"):
                entries += await self._fetch(batch)
            if self._legacy:  # the entries not moved yet (one moved meanwhile is read once)
                seen = {e.id for e in entries}
                entries += [e for e in await self._mover.entries(_entry) if e.id not in seen]
            return [e for e in entries if _matches(e, flt)]
        found = await asyncio.gather(
            *(self._client.sinter(self._filter_sets(flt, keys)) for keys in self._layouts)
        )
        ids = sorted(self._layouts[0].id_of_member(_text(m)) for members in found for m in members)
        return [e for e in await self._fetch(ids) if _matches(e, flt)]

    async def _script(
        self, script: Any, id: str, args: dict[str, Any], operation_id: str | None = None
    ) -> Any:
        keys = self._layout(id)
        args = {**args, "id": id, "member": keys.member(id), "prefix": keys.prefix}
        reply = await script(keys=keys.script_keys(id, operation_id), args=[json.dumps(args)])
        result: dict[str, Any] = json.loads(reply)
        return result

    # -- the interface ----------------------------------------------------------------------

    async def get(self, id: str) -> tuple[Entry, int] | None:
        async def work() -> tuple[Entry, int] | None:
            keys = self._layout(id)
            found = await self._get(keys=[keys.entry("mem:", id), keys.entry("memrev:", id)])
            if found is None:
                return None
            flat, hits, revision = found
            fields = hash_fields(flat)
            fields["hits"] = str(hits)
            return _entry(id, fields), int(revision)

        return await self._run("memory_get", work, id=id)

    def _write_args(self, write: EntryWrite, **overrides: Any) -> dict[str, Any]:
        now = self._clock()
        args: dict[str, Any] = {
            "title": write.title,
            "body": write.body,
            "type": write.type,
            "tags": list(write.tags),
            "source": write.source,
            "project": write.project,
            "ttl": 0,
            "if_version": -1,
            "op_id": "",
            "stamp": format_instant(now),
            "now": now,
            "max_versions": self._max_versions,
            "op_ttl": self._operation_ttl,
            "rollback": -1,
            "expect": "",
            "words": entry_terms(write.id, write.title, write.body, write.tags),
        }
        args.update(overrides)
        return args

    async def _reserve_operation(self, id: str, operation_id: str) -> SetOutcome | None:
        """Cluster mode: claim the operation id, or return its recorded outcome."""
        key = self._legacy_keys.operation(operation_id)
        args = json.dumps({"id": id, "pending_ttl": _PENDING_OPERATION_SECONDS})
        for _ in range(40):
            record = json.loads(await self._op_reserve(keys=[key], args=[args]))
            if record["status"] == "reserved":
                return None
            if record["memory_id"] != id:
                return SetOutcome("op_mismatch", id, recorded_id=str(record["memory_id"]))
            if record["state"] == "done":
                return SetOutcome(
                    "replayed", id, operation=str(record["action"]), revision=int(record["revision"])
                )
            await anyio.sleep(0.025)  # the same operation is being applied by another call
        raise StoreUnavailable(
            f"operation_id {operation_id} is still being applied; retry it", operation="memory_set"
        )

    async def _settle_operation(self, operation_id: str, outcome: SetOutcome) -> None:
        key = self._legacy_keys.operation(operation_id)
        if outcome.status != "applied":
            await self._client.delete(key)
            return
        pipe = self._client.pipeline(transaction=False)
        pipe.hset(key, mapping={"revision": outcome.revision, "action": outcome.operation, "state": "done"})
        pipe.expire(key, self._operation_ttl)
        await pipe.execute()

    async def set(
        self,
        write: EntryWrite,
        *,
        ttl: int | None,
        if_version: int | None,
        operation_id: str | None,
    ) -> SetOutcome:
        args = self._write_args(
            write,
            ttl=ttl or 0,
            if_version=-1 if if_version is None else if_version,
            op_id="" if self._cluster else operation_id or "",  # a cluster reserves it first
        )

        async def work() -> SetOutcome:
            if self._cluster and operation_id:
                recorded = await self._reserve_operation(write.id, operation_id)
                if recorded is not None:
                    return recorded
            result = await self._script(self._write, write.id, args, None if self._cluster else operation_id)
            status = result["status"]
            outcome: SetOutcome
            if status == "conflict":
                outcome = SetOutcome("conflict", write.id, current_revision=int(result["current_revision"]))
            elif status == "op_mismatch":
                outcome = SetOutcome("op_mismatch", write.id, recorded_id=str(result["recorded_id"]))
            else:
                outcome = SetOutcome(
                    status,
                    write.id,
                    operation=str(result["operation"]),
                    revision=int(result["revision"]),
                    # a single node's count came back with the write: no second round trip
                    entry_count=None if self._cluster or "count" not in result else int(result["count"]),
                )
            if self._cluster and operation_id:
                await self._settle_operation(operation_id, outcome)
            return outcome

        return await self._run("memory_set", work, id=write.id)

    async def delete(self, id: str) -> DeleteOutcome | None:
        args = {"stamp": format_instant(self._clock()), "max_versions": self._max_versions}

        async def work() -> DeleteOutcome | None:
            result = await self._script(self._delete, id, args)
            if result["status"] == "not_found":
                return None
            return DeleteOutcome(id, int(result["revision"]))

        return await self._run("memory_delete", work, id=id)

    async def history(self, id: str, limit: int) -> list[dict[str, Any]]:
        async def work() -> list[dict[str, Any]]:
            raw = await self._client.lrange(self._layout(id).entry("memver:", id), 0, limit - 1)
            versions: list[dict[str, Any]] = []
            for index, item in enumerate(raw):
                text = _text(item)
                try:
                    versions.append({"index": index, **json.loads(text)})
                except (ValueError, TypeError):
                    versions.append({"index": index, "raw": text})
            return versions

        return await self._run("memory_history", work, id=id)

    async def _rollback_script(self, id: str, version_index: int) -> dict[str, Any]:
        """Run the rollback with the words of the snapshot it restores, read just before;
        if the history moved meanwhile (the script says `changed`), read it again."""
        empty = EntryWrite(id=id, title="", body="", type="", tags=())
        history = self._layout(id).entry("memver:", id)
        for _ in range(20):
            raw = await self._client.lindex(history, version_index)
            expect, words = snapshot_words(id, raw)
            args = self._write_args(empty, rollback=version_index, expect=expect, words=words)
            result: dict[str, Any] = await self._script(self._write, id, args)
            if result["status"] != "changed":
                return result
        raise StoreUnavailable(
            f"{id}: its history keeps changing; retry the rollback", operation="memory_rollback"
        )

    async def rollback(self, id: str, version_index: int) -> RollbackOutcome:
        async def work() -> RollbackOutcome:
            result = await self._rollback_script(id, version_index)
            if result["status"] == "not_found":
                raise NotFound(f"Version {version_index} not found for {id}", operation="memory_rollback")
            if result["status"] == "bad_snapshot":
                raise StoreError("Could not parse version snapshot", operation="memory_rollback")
            return RollbackOutcome(
                id, str(result["operation"]), str(result["restored_from"]), int(result["revision"])
            )

        return await self._run("memory_rollback", work, id=id)

    def _filter_sets(self, flt: EntryFilter, keys: KeyLayout) -> list[str]:
        sets = [keys.index("tag:", t) for t in flt.tags]
        if flt.type is not None:
            sets.append(keys.index("type:", flt.type))
        if flt.project is not None:
            sets.append(keys.index("project:", flt.project))
        return sets

    async def _indexed(self, flt: EntryFilter, terms: list[str], offset: int, limit: int) -> EntryPage | None:
        """A page ranked from the word index: the search script scores the matches and
        returns only the rows that can be on the page, which the bridge orders exactly;
        only the page's entries are fetched whole. None while the index is not built (or
        a cluster still holds entries in the old layout), or when the query matches too
        much of a shard for one script: the caller scans.

        On a cluster every shard answers for its entries at once. A one-term query's order
        does not depend on the term's weight (it scales every score alike), so each shard
        cuts by its own statistics; with more terms the shards' statistics are added up
        first (STATS, a short script each), and every shard cuts by the store's. A shard
        with no entry holding every term sends its best with any term, which `order` drops
        when another shard's entries have them all. Either way the order, totals and
        `match` are a single node's."""
        if self._legacy:
            return None
        single = len(self._indexes) == 1  # its script sends the rows' entries too: no FETCH
        store = None
        if not single and len(terms) > 1 and (store := await self._store_stats(terms)) is None:
            return None
        found = await self._shard_candidates(flt, terms, offset + limit, whole=single, store=store)
        if found is None:
            return None
        stats = store or add_up([shard.stats for shard in found], terms)
        ordered, mode = order([c for shard in found for c in shard.candidates], terms, stats)
        wanted = [c.id for c in ordered[offset : offset + limit]]
        hashes = found[0].hashes if single else None
        page = [_entry(id, hashes[id]) for id in wanted] if hashes is not None else await self._fetch(wanted)
        matched = sum(shard.matched for shard in found if shard.mode == mode)
        return EntryPage(page, matched, match=mode)

    async def _store_stats(self, terms: list[str]) -> Stats | None:
        """The store's statistics of the terms from the word index (a cluster's shards added
        up); None while it is not built."""
        replies = await run_all(
            self._client, self._stats, [index.stats_call(terms) for index in self._indexes]
        )
        found = [stats_of(reply, terms) for reply in replies]
        parts = [shard for shard in found if shard is not None]
        return add_up(parts, terms) if len(parts) == len(found) else None

    async def _shard_candidates(
        self, flt: EntryFilter, terms: list[str], depth: int, *, whole: bool, store: Stats | None
    ) -> list[Ranking] | None:
        """Every shard's candidates at once; None when any shard's index cannot answer."""
        calls = [
            index.search_call(terms, self._filter_sets(flt, keys), depth, whole=whole, store=store)
            for index, keys in zip(self._indexes, self._layouts, strict=True)
        ]
        replies = await run_all(self._client, self._search, calls)
        found = [ranking_of(reply, terms, whole=whole, store=store) for reply in replies]
        shards = [shard for shard in found if shard is not None]
        return shards if len(shards) == len(found) else None

    async def _scanned(self, flt: EntryFilter, terms: list[str]) -> tuple[list[Entry], Stats]:
        """The entries of the filter, read whole, and the store's statistics of the terms:
        from the word index, or, while there is none, counted over every entry (read then)."""
        stats = None if self._legacy else await self._store_stats(terms)
        if stats is not None:
            return await self._candidates(flt), stats
        everything = await self._candidates(EntryFilter())
        return [e for e in everything if _matches(e, flt)], count_stats(everything, terms)

    async def search(self, flt: EntryFilter, query: str | None, *, offset: int, limit: int) -> EntryPage:
        async def work() -> EntryPage:
            terms = query_terms(query) if query else []
            if terms:
                if (indexed := await self._indexed(flt, terms, offset, limit)) is not None:
                    return indexed
                candidates, stats = await self._scanned(flt, terms)
                ranked, mode = rank(candidates, terms, stats)
                return EntryPage(ranked[offset : offset + limit], len(ranked), match=mode)
            candidates = await self._candidates(flt)
            if not query:
                ordered = sorted(candidates, key=_SORT_KEYS["hits"])
                return EntryPage(ordered[offset : offset + limit], len(ordered))
            # punctuation only: memory-mcp's substring match
            needle = query.lower()
            kept = [e for e in candidates if needle in e.title.lower() or needle in e.body.lower()]
            ordered = sorted(kept, key=_SORT_KEYS["hits"])
            return EntryPage(ordered[offset : offset + limit], len(ordered), match="all")

        return await self._run("memory_search", work, bulk=True)

    async def list_entries(self, flt: EntryFilter, *, sort: SortOrder, offset: int, limit: int) -> EntryPage:
        async def work() -> EntryPage:
            ordered = sorted(await self._candidates(flt), key=_SORT_KEYS[sort])
            return EntryPage(ordered[offset : offset + limit], len(ordered))

        return await self._run("memory_list", work, bulk=True)

    async def prune_candidates(self, cutoff: str, *, offset: int, limit: int) -> EntryPage:
        async def work() -> EntryPage:
            old = [e for e in await self._candidates(EntryFilter()) if e.hits == 0 and e.updated < cutoff]
            old.sort(key=lambda e: (e.updated, e.id))
            return EntryPage(old[offset : offset + limit], len(old))

        return await self._run("memory_prune_candidates", work, bulk=True)

    async def count(self) -> int:
        async def work() -> int:
            counts = await asyncio.gather(*(self._client.get(keys.own("memcount")) for keys in self._layouts))
            legacy = await self._mover.count() if self._legacy else 0
            return legacy + sum(int(count or 0) for count in counts)

        return await self._run("count", work)

    async def hits_zero_count(self) -> int:
        """Counted by a scan, so cached for 60 s (memory-mcp refreshes its gauge as often)."""
        now = time.monotonic()
        if self._hits_zero is not None and now - self._hits_zero[0] < 60:
            return self._hits_zero[1]

        async def work() -> int:
            zero = 0
            async for batch in self._scan_ids("mem:"):
                pipe = self._client.pipeline(transaction=False)
                for id in batch:
                    pipe.hget(self._layout(id).entry("mem:", id), "hits")
                zero += sum(1 for hits in await pipe.execute() if int(hits or 0) == 0)
                _progress()
            return zero

        value = await self._run("hits_zero_count", work, bulk=True)
        self._hits_zero = (now, value)
        return value

    async def sweep(self) -> int:
        now = self._clock()

        async def one_shard(keys: KeyLayout) -> int:
            names = [keys.own(k) for k in ("memexp", "memexpidx", "memcount", "memvocab")]
            args = {"now": now, "prefix": keys.prefix, "batch": 1000}
            return int(await self._sweep(keys=names, args=[json.dumps(args)]))

        async def work() -> int:
            return sum(await asyncio.gather(*(one_shard(keys) for keys in self._layouts)))

        return await self._run("sweep", work)

    async def export_records(self) -> AsyncIterator[list[EntryRecord]]:
        ids: set[str] = set()
        async with self._call("export", bulk=True):
            for kind in ("mem:", "memver:", "memrev:"):
                async for batch in self._scan_ids(kind):
                    ids.update(batch)
        ordered = sorted(ids)
        for start in range(0, len(ordered), _BATCH):
            async with self._call("export", bulk=True):
                records = await self._export_batch(ordered[start : start + _BATCH])
            if records:
                yield records

    async def _export_batch(self, ids: list[str]) -> list[EntryRecord]:
        replies = await self._per_shard(ids, self._export_many, _ROUND_TRIP)
        now = self._clock()
        records = []
        for id in ids:
            raw_hash, revision, history, pttl = replies[id]
            fields = hash_fields(raw_hash)
            entry = _entry(id, fields) if "title" in fields else None
            if entry is None and revision is None and not history:
                continue  # expired between the scan and the read
            records.append(
                EntryRecord(
                    id=id,
                    entry=entry,
                    revision=int(revision or 0),
                    history=tuple(_text(h) for h in history),
                    expires_at=now + pttl / 1000 if entry is not None and pttl and pttl > 0 else None,
                )
            )
        return records

    async def import_records(self, records: Sequence[EntryRecord]) -> None:
        def args_of(record: EntryRecord) -> dict[str, Any]:
            e = record.entry
            return {
                "entry": e.to_dict() if e is not None else False,
                "words": entry_terms(record.id, e.title, e.body, e.tags) if e is not None else {},
                "revision": record.revision,
                "history": list(record.history),
                "expires_at_ms": int(record.expires_at * 1000) if record.expires_at else 0,
                "only_new": False,
            }

        async def work() -> None:
            for start in range(0, len(records), _ROUND_TRIP):
                chunk = records[start : start + _ROUND_TRIP]
                if self._cluster:  # each shard's scripts at once
                    await asyncio.gather(*(self._script(self._import, r.id, args_of(r)) for r in chunk))
                    _progress()
                    continue
                keys = self._layouts[0]
                pipe = self._client.pipeline(transaction=False)
                for record in chunk:
                    args = {
                        **args_of(record),
                        "id": record.id,
                        "member": keys.member(record.id),
                        "prefix": keys.prefix,
                    }
                    await self._import(keys=keys.script_keys(record.id), args=[json.dumps(args)], client=pipe)
                await pipe.execute()
                _progress()

        await self._run("import", work, bulk=True)

    async def upkeep(self) -> int:
        """Nothing to do: memory_search on Valkey ranks by keywords only."""
        return 0

    # -- migrations (memctl migrate) ----------------------------------------------------------

    async def schema_version(self) -> int:
        """The data-layout version memctl recorded in this store (0: memory-mcp's or none)."""
        async with self._call("migrate"):
            return int(await self._client.get(self._meta("memschema")) or 0)

    async def record_schema_version(self, version: int) -> None:
        async with self._call("migrate"):
            await self._client.set(self._meta("memschema"), version)

    async def legacy_ids(self) -> list[str]:
        """Ids of entries without a revision counter (written by memory-mcp before 1.1)."""
        legacy: list[str] = []
        async with self._call("migrate", bulk=True):
            async for batch in self._scan_ids("mem:"):
                pipe = self._client.pipeline(transaction=False)
                for id in batch:
                    pipe.exists(self._layout(id).entry("memrev:", id))
                legacy += [id for id, has in zip(batch, await pipe.execute(), strict=True) if not has]
                _progress()
        return legacy

    async def upgrade_legacy(self, ids: Sequence[str]) -> int:
        """Give each legacy entry a revision counter and a first snapshot, one atomic script
        per entry; return how many were upgraded (already upgraded ones are skipped)."""
        async with self._call("migrate", bulk=True):
            done = 0
            for id in ids:
                done += int(await self._upgrade(keys=self._layout(id).entry_keys(id), args=[]))
                _progress()
            return done

    async def index_ready(self) -> bool:
        """Whether `memory_search` answers from the word index (False: it scans). A
        cluster's shards index every write; entries in its old layout are not indexed."""
        async with self._call("migrate"):
            if self._cluster:
                return not await self._mover.pending()
            return await self._indexes[0].ready()

    async def build_index_step(self) -> tuple[int, bool]:
        """Single node: index the entries of one SCAN batch written before the word index
        existed. Cluster: move a batch of entries from the old layout into their shards,
        which index them. (How many, whether the index is now complete.) Resumable,
        idempotent, and writes go on meanwhile."""
        if self._cluster:
            await self._run("migrate", lambda: anyio.sleep(0))  # seeds the shards' bookkeeping
            async with self._call("migrate", bulk=True):
                return await self._mover.step()
        async with self._call("migrate", bulk=True):
            return await self._indexes[0].build_step()

    async def ping(self) -> None:
        async with self._call("health"):
            await self._client.ping()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
