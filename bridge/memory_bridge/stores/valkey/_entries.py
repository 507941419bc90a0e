"""Versioned entries on Valkey (or any Redis-compatible server), memory-mcp's key layout.

Every mutation and the counting get are one Lua script (see `_scripts`). Reads that
cover many entries gather ids from the index sets (or SCAN when unfiltered) and fetch
the hashes in pipelined batches, never one round trip per key.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast

import anyio
import valkey.asyncio as valkey_async
from valkey.asyncio.retry import Retry
from valkey.backoff import ExponentialBackoff
from valkey.exceptions import ConnectionError as ValkeyConnectionError
from valkey.exceptions import TimeoutError as ValkeyTimeoutError

from ..._errors import NotFound, StoreError
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
from ._errors import map_valkey_errors
from ._rank import rank
from ._scripts import DELETE, GET, IMPORT, SWEEP, WRITE
from ._url import ValkeyTarget, parse_valkey_url

__all__ = ["ValkeyEntryStore"]

T = TypeVar("T")
CALL_TIMEOUT_SECONDS = 2.0
_BATCH = 500
_NO_OP_KEY = "memop:"  # a placeholder KEYS slot when no operation_id is given


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


def _decode_hash(raw: dict[Any, Any] | list[Any]) -> dict[str, str]:
    if isinstance(raw, list):
        return {_text(raw[i]): _text(raw[i + 1]) for i in range(0, len(raw), 2)}
    return {_text(k): _text(v) for k, v in raw.items()}


_SORT_KEYS: dict[str, Callable[[Entry], Any]] = {
    "hits": lambda e: (-e.hits, _desc(e.updated), e.id),
    "updated": lambda e: (_desc(e.updated), e.id),
}


def _desc(text: str) -> tuple[int, ...]:
    return (*(-ord(c) for c in text), 0)


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
        self._prefix = self.target.prefix
        self._max_versions = max_versions
        self._operation_ttl = operation_ttl
        self._clock = clock
        self._client = valkey_async.Valkey(
            host=self.target.host,
            port=self.target.port,
            db=self.target.db,
            username=self.target.username,
            password=self.target.password,
            ssl=self.target.tls,
            ssl_ca_certs=self.target.ca_file,
            socket_timeout=CALL_TIMEOUT_SECONDS * 0.75,
            socket_connect_timeout=CALL_TIMEOUT_SECONDS * 0.5,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), retries=1),
            retry_on_error=[ValkeyConnectionError, ValkeyTimeoutError],
            health_check_interval=30,
            decode_responses=False,
        )
        self._write = self._client.register_script(WRITE)
        self._delete = self._client.register_script(DELETE)
        self._get = self._client.register_script(GET)
        self._sweep = self._client.register_script(SWEEP)
        self._import = self._client.register_script(IMPORT)
        self._hits_zero: tuple[float, int] | None = None
        self._count_ready = False

    # -- plumbing ---------------------------------------------------------------------------

    def _key(self, kind: str, name: str = "") -> str:
        return f"{self._prefix}{kind}{name}"

    def _entry_keys(self, id: str) -> list[str]:
        return [self._key("mem:", id), self._key("memver:", id), self._key("memrev:", id)]

    def _bookkeeping_keys(self) -> list[str]:
        return [self._key("memcount"), self._key("memexp"), self._key("memexpidx")]

    @asynccontextmanager
    async def _call(self, operation: str) -> AsyncIterator[None]:
        with (
            map_valkey_errors(operation, self.url, CALL_TIMEOUT_SECONDS),
            anyio.fail_after(CALL_TIMEOUT_SECONDS),
        ):
            yield

    async def _run(self, operation: str, work: Callable[[], Awaitable[T]]) -> T:
        async with self._call(operation):
            if not self._count_ready:
                await self._ensure_count()
            return await work()

    async def _ensure_count(self) -> None:
        """Seed `memcount` once for data written by memory-mcp (which keeps no count)."""
        count_key = self._key("memcount")
        if await self._client.exists(count_key):
            self._count_ready = True
            return
        live = 0
        async for batch in self._scan_ids():
            fetched = await self._fetch(batch)
            live += len(fetched)
        await self._client.set(count_key, live, nx=True)
        self._count_ready = True

    async def _scan_ids(self) -> AsyncIterator[list[str]]:
        prefix = self._key("mem:")
        async for keys in self._scan_keys(prefix + "*"):
            yield [k[len(prefix) :] for k in keys]

    async def _fetch(self, ids: Iterable[str]) -> list[Entry]:
        """HGETALL every id in pipelined batches; skip ids whose hash is gone."""
        ids = list(ids)
        entries: list[Entry] = []
        for start in range(0, len(ids), _BATCH):
            chunk = ids[start : start + _BATCH]
            pipe = self._client.pipeline(transaction=False)
            for id in chunk:
                pipe.hgetall(self._key("mem:", id))
            for id, raw in zip(chunk, await pipe.execute(), strict=True):
                fields = _decode_hash(raw)
                if "title" in fields:
                    entries.append(_entry(id, fields))
        return entries

    async def _candidates(self, flt: EntryFilter) -> list[Entry]:
        sets = [self._key("tag:", t) for t in flt.tags]
        if flt.type is not None:
            sets.append(self._key("type:", flt.type))
        if flt.project is not None:
            sets.append(self._key("project:", flt.project))
        if not sets:
            entries: list[Entry] = []
            async for batch in self._scan_ids():
                entries += await self._fetch(batch)
            return entries
        members = await cast(Awaitable[list[bytes]], self._client.sinter(sets))
        return await self._fetch(_text(m)[len("mem:") :] for m in members)

    # -- the interface ----------------------------------------------------------------------

    async def get(self, id: str) -> tuple[Entry, int] | None:
        async def work() -> tuple[Entry, int] | None:
            found = await self._get(keys=[self._key("mem:", id), self._key("memrev:", id)])
            if found is None:
                return None
            flat, hits, revision = found
            fields = _decode_hash(flat)
            fields["hits"] = str(hits)
            return _entry(id, fields), int(revision)

        return await self._run("memory_get", work)

    async def _write_script(self, args: dict[str, Any], op_key: str) -> dict[str, Any]:
        keys = [*self._entry_keys(args["id"]), op_key, *self._bookkeeping_keys()]
        raw = await self._write(keys=keys, args=[json.dumps(args)])
        return dict(json.loads(raw))

    def _write_args(self, write: EntryWrite, **overrides: Any) -> dict[str, Any]:
        now = self._clock()
        args: dict[str, Any] = {
            "id": write.id,
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
            "prefix": self._prefix,
        }
        args.update(overrides)
        return args

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
            op_id=operation_id or "",
        )
        op_key = self._key("memop:", operation_id) if operation_id else self._key(_NO_OP_KEY)

        async def work() -> SetOutcome:
            result = await self._write_script(args, op_key)
            status = result["status"]
            if status == "conflict":
                return SetOutcome("conflict", write.id, current_revision=int(result["current_revision"]))
            if status == "op_mismatch":
                return SetOutcome("op_mismatch", write.id, recorded_id=str(result["recorded_id"]))
            return SetOutcome(
                status, write.id, operation=str(result["operation"]), revision=int(result["revision"])
            )

        return await self._run("memory_set", work)

    async def delete(self, id: str) -> DeleteOutcome | None:
        args = {
            "id": id,
            "stamp": format_instant(self._clock()),
            "max_versions": self._max_versions,
            "prefix": self._prefix,
        }

        async def work() -> DeleteOutcome | None:
            raw = await self._delete(
                keys=[*self._entry_keys(id), *self._bookkeeping_keys()], args=[json.dumps(args)]
            )
            result = json.loads(raw)
            if result["status"] == "not_found":
                return None
            return DeleteOutcome(id, int(result["revision"]))

        return await self._run("memory_delete", work)

    async def history(self, id: str, limit: int) -> list[dict[str, Any]]:
        async def work() -> list[dict[str, Any]]:
            raw = await cast(
                Awaitable[list[bytes]], self._client.lrange(self._key("memver:", id), 0, limit - 1)
            )
            versions: list[dict[str, Any]] = []
            for index, item in enumerate(raw):
                text = _text(item)
                try:
                    versions.append({"index": index, **json.loads(text)})
                except (ValueError, TypeError):
                    versions.append({"index": index, "raw": text})
            return versions

        return await self._run("memory_history", work)

    async def rollback(self, id: str, version_index: int) -> RollbackOutcome:
        placeholder = EntryWrite(id=id, title="", body="", type="", tags=())
        args = self._write_args(placeholder, rollback=version_index)

        async def work() -> RollbackOutcome:
            result = await self._write_script(args, self._key(_NO_OP_KEY))
            if result["status"] == "not_found":
                raise NotFound(f"Version {version_index} not found for {id}", operation="memory_rollback")
            if result["status"] == "bad_snapshot":
                raise StoreError("Could not parse version snapshot", operation="memory_rollback")
            return RollbackOutcome(
                id, str(result["operation"]), str(result["restored_from"]), int(result["revision"])
            )

        return await self._run("memory_rollback", work)

    async def search(self, flt: EntryFilter, query: str | None, *, offset: int, limit: int) -> EntryPage:
        async def work() -> EntryPage:
            candidates = await self._candidates(flt)
            if not query:
                ordered = sorted(candidates, key=_SORT_KEYS["hits"])
                return EntryPage(ordered[offset : offset + limit], len(ordered))
            terms = query_terms(query)
            if not terms:  # punctuation only: memory-mcp's substring match
                needle = query.lower()
                kept = [e for e in candidates if needle in e.title.lower() or needle in e.body.lower()]
                ordered = sorted(kept, key=_SORT_KEYS["hits"])
                return EntryPage(ordered[offset : offset + limit], len(ordered), match="all")
            ranked, mode = rank(candidates, terms)
            return EntryPage(ranked[offset : offset + limit], len(ranked), match=mode)

        return await self._run("memory_search", work)

    async def list_entries(self, flt: EntryFilter, *, sort: SortOrder, offset: int, limit: int) -> EntryPage:
        async def work() -> EntryPage:
            ordered = sorted(await self._candidates(flt), key=_SORT_KEYS[sort])
            return EntryPage(ordered[offset : offset + limit], len(ordered))

        return await self._run("memory_list", work)

    async def prune_candidates(self, cutoff: str, *, offset: int, limit: int) -> EntryPage:
        async def work() -> EntryPage:
            old = [e for e in await self._candidates(EntryFilter()) if e.hits == 0 and e.updated < cutoff]
            old.sort(key=lambda e: (e.updated, e.id))
            return EntryPage(old[offset : offset + limit], len(old))

        return await self._run("memory_prune_candidates", work)

    async def count(self) -> int:
        async def work() -> int:
            return int(await self._client.get(self._key("memcount")) or 0)

        return await self._run("count", work)

    async def hits_zero_count(self) -> int:
        """Counted by a scan, so cached for 60 s (memory-mcp refreshes its gauge as often)."""
        now = time.monotonic()
        if self._hits_zero is not None and now - self._hits_zero[0] < 60:
            return self._hits_zero[1]

        async def work() -> int:
            zero = 0
            async for batch in self._scan_ids():
                pipe = self._client.pipeline(transaction=False)
                for id in batch:
                    pipe.hget(self._key("mem:", id), "hits")
                zero += sum(1 for hits in await pipe.execute() if int(hits or 0) == 0)
            return zero

        async with self._call("hits_zero_count"):
            value = await work()
        self._hits_zero = (now, value)
        return value

    async def sweep(self) -> int:
        args = {"now": self._clock(), "prefix": self._prefix, "batch": 1000}

        async def work() -> int:
            keys = [self._key("memexp"), self._key("memexpidx"), self._key("memcount")]
            return int(await self._sweep(keys=keys, args=[json.dumps(args)]))

        return await self._run("sweep", work)

    async def export_records(self) -> AsyncIterator[list[EntryRecord]]:
        ids: set[str] = set()
        async with self._call("export"):
            for kind in ("mem:", "memver:", "memrev:"):
                prefix = self._key(kind)
                async for keys in self._scan_keys(prefix + "*"):
                    ids.update(k[len(prefix) :] for k in keys)
        ordered = sorted(ids)
        for start in range(0, len(ordered), _BATCH):
            chunk = ordered[start : start + _BATCH]
            async with self._call("export"):
                batch = await self._export_batch(chunk)
            if batch:
                yield batch

    async def _scan_keys(self, pattern: str) -> AsyncIterator[list[str]]:
        cursor: int = 0
        while True:
            cursor, keys = await self._client.scan(cursor=cursor, match=pattern, count=1000)
            if keys:
                yield [_text(k) for k in keys]
            if cursor == 0:
                break

    async def _export_batch(self, ids: list[str]) -> list[EntryRecord]:
        pipe = self._client.pipeline(transaction=False)
        for id in ids:
            pipe.hgetall(self._key("mem:", id))
            pipe.get(self._key("memrev:", id))
            pipe.lrange(self._key("memver:", id), 0, -1)
            pipe.pttl(self._key("mem:", id))
        replies = await pipe.execute()
        now = self._clock()
        records = []
        for i, id in enumerate(ids):
            raw_hash, revision, history, pttl = replies[4 * i : 4 * i + 4]
            fields = _decode_hash(raw_hash)
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
        async def work() -> None:
            pipe = self._client.pipeline(transaction=False)
            for record in records:
                entry = record.entry.to_dict() if record.entry is not None else False
                args = {
                    "id": record.id,
                    "entry": entry,
                    "revision": record.revision,
                    "history": list(record.history),
                    "expires_at_ms": int(record.expires_at * 1000) if record.expires_at else 0,
                    "prefix": self._prefix,
                }
                keys = [*self._entry_keys(record.id), *self._bookkeeping_keys()]
                await self._import(keys=keys, args=[json.dumps(args)], client=pipe)
            await pipe.execute()

        await self._run("import", work)

    async def ping(self) -> None:
        async with self._call("health"):
            await self._client.ping()

    async def close(self) -> None:
        await self._client.aclose()
