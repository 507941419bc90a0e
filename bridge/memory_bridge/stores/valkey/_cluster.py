"""Cluster mode: the bookkeeping a script could not do because it lives in other slots.

A script on an entry's slot returns a `book` (index sets to leave and join, a change
of the entry count, expiry tracking); `apply_book` carries it out right after, in one
pipeline. Index sets may therefore trail an entry by one round trip; readers re-check
every candidate against the entry itself, so a trailing index never shows a wrong
result.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from valkey.asyncio.cluster import ValkeyCluster


from ._keys import KeyLayout

__all__ = ["apply_book", "sweep_cluster"]


def _index_ops(pipe: Any, keys: KeyLayout, member: str, info: dict[str, str], add: bool) -> None:
    command = pipe.sadd if add else pipe.srem
    if info.get("type"):
        command(keys.index("type:", info["type"]), member)
    command(keys.index("project:", info.get("project", "")), member)
    for tag in filter(None, info.get("tags", "").split(",")):
        command(keys.index("tag:", tag), member)


async def _forget_stale(client: ValkeyCluster, keys: KeyLayout, id: str, pipe: Any) -> None:
    """An expired entry not swept yet: queue its removal from indexes, count and tracking."""
    info = await cast(Awaitable[bytes | None], client.hget(keys.own("memexpidx"), id))
    if info is None:
        return
    _index_ops(pipe, keys, keys.member(id), json.loads(info), add=False)
    pipe.decrby(keys.own("memcount"), 1)
    pipe.zrem(keys.own("memexp"), id)
    pipe.hdel(keys.own("memexpidx"), id)


async def apply_book(client: ValkeyCluster, keys: KeyLayout, id: str, book: dict[str, Any]) -> None:
    pipe = client.pipeline(transaction=False)
    member = keys.member(id)
    if book.get("stale_check"):
        await _forget_stale(client, keys, id, pipe)
    if isinstance(book.get("removed"), dict):
        _index_ops(pipe, keys, member, book["removed"], add=False)
    if isinstance(book.get("added"), dict):
        _index_ops(pipe, keys, member, book["added"], add=True)
    if book.get("count"):
        pipe.incrby(keys.own("memcount"), int(book["count"]))
    expiry = book.get("expiry")
    if isinstance(expiry, dict):
        pipe.zadd(keys.own("memexp"), {id: float(expiry["at"])})
        pipe.hset(keys.own("memexpidx"), id, expiry["info"])
    elif expiry is False:
        pipe.zrem(keys.own("memexp"), id)
        pipe.hdel(keys.own("memexpidx"), id)
    await pipe.execute()


async def sweep_cluster(client: ValkeyCluster, keys: KeyLayout, now: float, batch: int) -> int:
    """Take entries Valkey has expired out of their index sets and the count."""
    raw_ids = await client.zrangebyscore(keys.own("memexp"), "-inf", now, start=0, num=batch)
    ids = [i.decode() if isinstance(i, bytes) else str(i) for i in raw_ids]
    if not ids:
        return 0
    probe = client.pipeline(transaction=False)
    for id in ids:
        probe.exists(keys.entry("mem:", id))
    gone = [id for id, exists in zip(ids, await probe.execute(), strict=True) if not exists]
    pipe = client.pipeline(transaction=False)
    for id in gone:
        await _forget_stale(client, keys, id, pipe)
        pipe.zrem(keys.own("memexp"), id)  # also when no index info was recorded
    await pipe.execute()
    return len(gone)
