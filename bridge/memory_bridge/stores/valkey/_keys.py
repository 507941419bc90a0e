"""Key names: memory-mcp's layout on a single node, and its sharded copy on a cluster.

A single node holds one keyspace, memory-mcp's exactly (`mem:<id>` under an optional
prefix). A Valkey Cluster store holds `SHARDS` keyspaces, each that same layout under its
own hash tag (`<prefix>{<prefix>memctl-07}mem:<id>`): an entry lives in the shard its id
hashes to, with its index sets, its words and the shard's bookkeeping, so every script
that changes an entry changes its indexes in the same call, as on a single node, and the
shards spread a project over the cluster's nodes.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

__all__ = ["SHARDS", "KeyLayout", "LegacyClusterKeys", "shard_layouts"]

SHARDS = 16
_SHARD_DIGITS = 2


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """One keyspace: memory-mcp's key names under `prefix` (which, on a cluster, ends in
    the shard's hash tag)."""

    prefix: str = ""

    def entry(self, kind: str, id: str) -> str:
        """`kind` is mem:, memver: or memrev:."""
        return f"{self.prefix}{kind}{id}"

    def entry_keys(self, id: str) -> list[str]:
        return [self.entry("mem:", id), self.entry("memver:", id), self.entry("memrev:", id)]

    def member(self, id: str) -> str:
        """How an entry is named inside index sets and word hashes (its key without the prefix)."""
        return f"mem:{id}"

    def id_of_member(self, member: str) -> str:
        return member[4:]

    def id_of_key(self, kind: str, key: str) -> str:
        return key[len(self.prefix) + len(kind) :]

    def pattern(self, kind: str) -> str:
        return f"{self.prefix}{kind}*"

    def operation(self, operation_id: str) -> str:
        return f"{self.prefix}memop:{operation_id}"

    def terms(self, id: str) -> str:
        """The words an entry is indexed under, with their counts."""
        return f"{self.prefix}memterms:{id}"

    def index(self, kind: str, name: str) -> str:
        """`kind` is tag:, type: or project:."""
        return f"{self.prefix}{kind}{name}"

    def own(self, name: str) -> str:
        """memctl's bookkeeping keys: memcount, memexp, memexpidx, memvocab, memidx, ..."""
        return f"{self.prefix}{name}"

    def script_keys(self, id: str, operation_id: str | None = None) -> list[str]:
        """KEYS for the write, delete and import scripts."""
        op = self.operation(operation_id) if operation_id else f"{self.prefix}memop:"
        own = [self.own(name) for name in ("memcount", "memexp", "memexpidx")]
        return [*self.entry_keys(id), op, *own, self.terms(id), self.own("memvocab")]


def _tag(prefix: str, shard: int | str) -> str:
    number = shard if isinstance(shard, str) else f"{shard:0{_SHARD_DIGITS}d}"
    return f"{prefix}{{{prefix}memctl-{number}}}"


def shard_layouts(prefix: str, cluster: bool) -> list[KeyLayout]:
    """The store's keyspaces: one on a single node, SHARDS on a cluster."""
    if not cluster:
        return [KeyLayout(prefix)]
    return [KeyLayout(_tag(prefix, shard)) for shard in range(SHARDS)]


def shard_of(id: str, shards: int) -> int:
    return zlib.crc32(id.encode()) % shards if shards > 1 else 0


def shards_pattern(prefix: str, kind: str) -> str:
    """A SCAN pattern for one kind of key in every shard."""
    return f"{_tag(prefix, '?' * _SHARD_DIGITS)}{kind}*"


@dataclass(frozen=True, slots=True)
class LegacyClusterKeys:
    """The cluster layout of memctl before the sharded word index (`mem:{<id>}`, index
    sets without a hash tag, bookkeeping under `{memctl}`): read to move its entries."""

    prefix: str

    def entry(self, kind: str, id: str) -> str:
        return f"{self.prefix}{kind}{{{id}}}"

    def id_of_key(self, kind: str, key: str) -> str:
        return key[len(self.prefix) + len(kind) + 1 : -1]

    def pattern(self, kind: str) -> str:
        return f"{self.prefix}{kind}{{*"

    def own(self, name: str) -> str:
        return f"{self.prefix}{{memctl}}:{name}"

    def operation(self, operation_id: str) -> str:
        """Where a cluster store reserves an operation id (both layouts)."""
        return f"{self.prefix}memop:{{{operation_id}}}"
