"""Key names for one store: memory-mcp's layout, or its cluster variant with hash tags."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KeyLayout"]


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """Single node: `mem:<id>` exactly as memory-mcp. Cluster: `mem:{<id>}`, so an entry's
    hash, history and revision share one slot and its scripts stay in that slot; memctl's
    own bookkeeping keys share the `{memctl}` slot."""

    prefix: str = ""
    cluster: bool = False

    def entry(self, kind: str, id: str) -> str:
        """`kind` is mem:, memver: or memrev:."""
        return f"{self.prefix}{kind}{{{id}}}" if self.cluster else f"{self.prefix}{kind}{id}"

    def entry_keys(self, id: str) -> list[str]:
        return [self.entry("mem:", id), self.entry("memver:", id), self.entry("memrev:", id)]

    def member(self, id: str) -> str:
        """How an entry is named inside index sets (its key without the prefix)."""
        return f"mem:{{{id}}}" if self.cluster else f"mem:{id}"

    def id_of_member(self, member: str) -> str:
        return member[5:-1] if self.cluster else member[4:]

    def id_of_key(self, kind: str, key: str) -> str:
        rest = key[len(self.prefix) + len(kind) :]
        return rest[1:-1] if self.cluster else rest

    def pattern(self, kind: str) -> str:
        return f"{self.prefix}{kind}*"

    def operation(self, operation_id: str) -> str:
        return (
            f"{self.prefix}memop:{{{operation_id}}}" if self.cluster else f"{self.prefix}memop:{operation_id}"
        )

    def terms(self, id: str) -> str:
        """The words an entry is indexed under, space-separated (single node only)."""
        return f"{self.prefix}memterms:{{{id}}}" if self.cluster else f"{self.prefix}memterms:{id}"

    def word(self, word: str) -> str:
        """The set of entries (as members) having `word` (single node only)."""
        return f"{self.prefix}memw:{word}"

    def index(self, kind: str, name: str) -> str:
        """`kind` is tag:, type: or project:."""
        return f"{self.prefix}{kind}{name}"

    def own(self, name: str) -> str:
        """memctl's bookkeeping keys: memcount, memexp, memexpidx, memvocab, memidx."""
        return f"{self.prefix}{{memctl}}:{name}" if self.cluster else f"{self.prefix}{name}"

    def script_keys(self, id: str, operation_id: str | None = None) -> list[str]:
        """KEYS for the write, delete and import scripts."""
        keys = self.entry_keys(id)
        if self.cluster:
            return [*keys, keys[0]]  # the operation record lives elsewhere; a same-slot placeholder
        op = self.operation(operation_id) if operation_id else f"{self.prefix}memop:"
        own = [self.own(name) for name in ("memcount", "memexp", "memexpidx")]
        return [*keys, op, *own, self.terms(id), self.own("memvocab")]
