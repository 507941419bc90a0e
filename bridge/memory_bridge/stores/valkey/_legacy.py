"""Moving a cluster store's entries from memctl's old cluster layout into its shards.

Before the sharded word index, a cluster store kept each entry under its own hash tag
(`mem:{<id>}`), its index sets spread over the cluster and its bookkeeping under
`{memctl}`; the old `{memctl}:memcount` says such data may be left. Until it is all moved
the store keeps working: a call about one entry moves that entry first, and searches
and lists scan both layouts. `memctl migrate` moves the rest in batches (step
`valkey-index`), each entry by one script into its shard (which indexes it) that leaves
an entry already there alone, then removes the old keys; the bridge serves and writes
meanwhile. The last step drops the old index sets and bookkeeping.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from .._base import Entry
from ._keys import KeyLayout, LegacyClusterKeys
from ._rank import entry_terms
from ._replies import hash_fields
from ._scripts import LEGACY_READ

__all__ = ["LegacyMover"]

_BATCH = 500
_AT_ONCE = 50  # entries moved (or read) concurrently
_KINDS = ("mem:", "memver:", "memrev:")


class LegacyMover:
    def __init__(
        self,
        client: Any,
        keys: LegacyClusterKeys,
        import_script: Any,
        layout_of: Callable[[str], KeyLayout],
        progress: Callable[[], None],
    ) -> None:
        self._client = client
        self._keys = keys
        self._import = import_script
        self._layout_of = layout_of
        self._progress = progress
        self._read = client.register_script(LEGACY_READ)
        self._todo: list[str] = []

    async def pending(self) -> bool:
        """Whether entries of the old layout may be left."""
        return bool(await self._client.exists(self._keys.own("memcount")))

    async def _ids(self, kinds: tuple[str, ...] = _KINDS) -> set[str]:
        ids: set[str] = set()
        for kind in kinds:
            async for key in self._client.scan_iter(match=self._keys.pattern(kind), count=1000):
                self._progress()
                ids.add(self._keys.id_of_key(kind, str(key)))
        return ids

    async def move(self, ids: list[str]) -> int:
        """Move each entry (its hash, revision, history, expiry) into its shard unless the
        shard has it already; remove its old keys. How many were moved."""
        moved = 0
        for start in range(0, len(ids), _AT_ONCE):
            chunk = ids[start : start + _AT_ONCE]
            moved += sum(await asyncio.gather(*(self._move_one(id) for id in chunk)))
            self._progress()
        return moved

    async def _move_one(self, id: str) -> int:
        old = [self._keys.entry(kind, id) for kind in _KINDS]
        flat, revision, history, pttl = await self._read(keys=old, args=[])
        fields = hash_fields(flat)
        if "title" not in fields and revision is None and not history:
            return 0
        entry: dict[str, Any] | bool = False
        words: dict[str, str] = {}
        if "title" in fields:
            tags = [t for t in fields.get("tags", "").split(",") if t]
            entry = {
                "title": fields["title"],
                "body": fields.get("body", ""),
                "type": fields.get("type", ""),
                "tags": tags,
                "source": fields.get("source", "unknown"),
                "project": fields.get("project", ""),
                "created": fields.get("created", ""),
                "updated": fields.get("updated", ""),
                "hits": int(fields.get("hits") or 0),
                "ttl": fields.get("ttl", ""),
            }
            words = entry_terms(id, fields["title"], fields.get("body", ""), tags)
        layout = self._layout_of(id)
        args = {
            "id": id,
            "member": layout.member(id),
            "prefix": layout.prefix,
            "entry": entry,
            "words": words,
            "revision": int(revision or 0),
            "history": list(history),
            "expires_at_ms": int(time.time() * 1000) + pttl if entry and pttl and pttl > 0 else 0,
            "only_new": True,
        }
        result = json.loads(await self._import(keys=layout.script_keys(id), args=[json.dumps(args)]))
        await self._client.delete(*old)
        if result["status"] != "ok":
            return 0
        if entry:
            await self._client.decr(self._keys.own("memcount"))
        return 1

    async def entries(self, make: Callable[[str, dict[str, str]], Entry]) -> list[Entry]:
        """Every entry still in the old layout (for a scan while the move goes on)."""
        ids = sorted(await self._ids(("mem:",)))
        found = []
        for start in range(0, len(ids), _BATCH):
            pipe = self._client.pipeline(transaction=False)
            for id in ids[start : start + _BATCH]:
                pipe.hgetall(self._keys.entry("mem:", id))
            for id, flat in zip(ids[start : start + _BATCH], await pipe.execute(), strict=True):
                if "title" in (fields := hash_fields(flat)):
                    found.append(make(id, fields))
            self._progress()
        return found

    async def count(self) -> int:
        return max(0, int(await self._client.get(self._keys.own("memcount")) or 0))

    async def step(self) -> tuple[int, bool]:
        """Move one batch; when a fresh scan finds nothing left, drop the old index sets
        and bookkeeping. (How many were moved, whether the old layout is gone.)"""
        if not await self.pending():
            return 0, True
        if not self._todo:
            self._todo = sorted(await self._ids())
            if not self._todo:
                await self._finish()
                return 0, True
        batch, self._todo = self._todo[:_BATCH], self._todo[_BATCH:]
        return await self.move(batch), False

    async def _finish(self) -> None:
        prefix = self._keys.prefix
        for kind in ("tag:", "type:", "project:"):
            async for key in self._client.scan_iter(match=f"{prefix}{kind}*", count=1000):
                await self._client.delete(key)
                self._progress()
        await self._client.delete(self._keys.own("memexp"), self._keys.own("memexpidx"))
        await self._client.delete(self._keys.own("memcount"))
