"""The word index of a Valkey store (or of one shard of a cluster store): searching it, and
building it for old data (single node: a cluster's shards only ever held indexed entries).

Every write keeps the index (see `_scripts`); what is here reads it for `memory_search`,
and builds it for entries written before it existed (`memctl migrate`): SCAN in small
batches, each indexed by a short script that skips entries written meanwhile, so writes
go on during the build, and a run stopped half-way resumes at the SCAN cursor it saved.
Until a build has been through every key, `memidx` is not `ready` and searches scan.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ._calls import Call
from ._keys import KeyLayout
from ._rank import Candidate, Mode, Stats, entry_terms
from ._replies import hash_fields
from ._scripts import INDEX_BATCH, INDEX_READ

__all__ = ["IndexState", "Ranking", "WordIndex", "add_up", "ranking_of", "snapshot_words", "stats_of"]

# Entries whose recorded expiry is at most this far ahead are checked for being gone when
# a search counts the entries searched: covers clock differences between bridges and server.
EXPIRY_SLACK_SECONDS = 300
# A search whose terms match more entries than this scans instead (in batches, each a short
# call): one script over them all would hold the server, and every other call, too long.
# Reading a word's entries costs the script a few tenths of a microsecond each, up to 1-2
# on a busy machine (bench/README.md): 500,000 is a second at most, far below a scan of the
# same store, which fetches every entry into the bridge.
MAX_VISITS = 500_000
_SCAN_COUNT = 500
_SCRIPT_BATCH = 100
_ABSENT = "0,0,0,0"  # SEARCH's counts of a term a row does not have


class IndexState(StrEnum):
    READY = "ready"


@dataclass(frozen=True, slots=True)
class Ranking:
    """The rows that can be among the best `depth` of a query (of the entries with every
    term, or with any if none has all), the statistics they were scored by (this node's
    or shard's, unless the store's were given), and how many have the terms (the page's
    total); asked for `whole`, each row's entry as its hash's fields (id -> fields)."""

    candidates: list[Candidate]
    stats: Stats
    mode: Mode
    matched: int
    hashes: dict[str, dict[str, str]] | None = None


def add_up(parts: Sequence[Stats], terms: list[str]) -> Stats:
    """A cluster's statistics: its shards' added up."""
    return Stats(sum(p.searched for p in parts), {t: sum(p.frequency[t] for p in parts) for t in terms})


def snapshot_words(id: str, raw: str | None) -> tuple[str, dict[str, str]]:
    """(the snapshot as read, the words the entry will have once rolled back to it), with
    the same reading of the snapshot as the write script's."""
    if raw is None:
        return "", {}
    try:
        snap = json.loads(raw)
    except ValueError:
        return raw, {}
    if not isinstance(snap, dict) or not isinstance(snap.get("title"), str):
        return raw, {}
    body = snap.get("body")
    tags = snap.get("tags")
    tag_list = [str(t) for t in tags] if isinstance(tags, list) else []
    return raw, entry_terms(id, snap["title"], "" if body is None or body is False else str(body), tag_list)


def stats_of(reply: Any, terms: list[str]) -> Stats | None:
    """STATS's reply; None while the index is not built."""
    if reply[0] != "ok":
        return None
    return Stats(int(reply[1]), {t: int(f) for t, f in zip(terms, reply[2], strict=True)})


def ranking_of(reply: Any, terms: list[str], *, whole: bool, store: Stats | None) -> Ranking | None:
    """SEARCH's reply; None while the index is not built, or when the terms match too many
    entries for one script (the caller scans)."""
    if reply[0] != "ok":
        return None
    _, searched, mode, freq, rows, matched = reply
    candidates = []
    hashes: dict[str, dict[str, str]] | None = {} if whole else None
    for id, hits, updated, *rest in json.loads(rows):
        counts = {
            term: tuple(map(int, text.split(",")))
            for term, text in zip(terms, rest, strict=False)
            if text != _ABSENT
        }
        candidates.append(Candidate(id, int(hits or 0), updated, counts))
        if hashes is not None:
            hashes[id] = hash_fields(rest[len(terms)])
    stats = store or Stats(int(searched), {t: int(f) for t, f in zip(terms, freq, strict=True)})
    found: Mode = "any" if mode == "any" else "all"
    return Ranking(candidates, stats, found, int(matched), hashes)


class WordIndex:
    def __init__(
        self, client: Any, keys: KeyLayout, clock: Callable[[], float], progress: Callable[[], None]
    ) -> None:
        self._client = client
        self._keys = keys
        self._clock = clock
        self._progress = progress
        self._read = client.register_script(INDEX_READ)
        self._batch = client.register_script(INDEX_BATCH)

    def _args(self, terms: list[str]) -> dict[str, Any]:
        return {
            "prefix": self._keys.prefix,
            "terms": [{"t": t, "exact": len(t) < 3} for t in terms],
            "now": self._clock(),
            "slack": EXPIRY_SLACK_SECONDS,
        }

    def _keys_of_search(self) -> list[str]:
        return [self._keys.own(k) for k in ("memidx", "memcount", "memexp", "memvocab")]

    def stats_call(self, terms: list[str]) -> Call:
        """The STATS call for this node's (or shard's) statistics of the terms."""
        return self._keys_of_search(), [json.dumps(self._args(terms))]

    def search_call(
        self, terms: list[str], filter_sets: list[str], depth: int, *, whole: bool, store: Stats | None
    ) -> Call:
        """The SEARCH call for the rows that can be among the best `depth` for the terms
        among the live entries of the filter sets, with `whole` their entries' hashes too;
        scored by the `store`'s statistics when given (else this node's or shard's)."""
        args = {
            **self._args(terms),
            "filters": filter_sets,
            "max_visits": MAX_VISITS,
            "depth": max(depth, 1),
            "whole": whole,
        }
        if store is not None:
            args["store"] = {"searched": store.searched, "freq": [store.frequency[t] for t in terms]}
        return self._keys_of_search(), [json.dumps(args)]

    async def ready(self) -> bool:
        return bool(await self._client.get(self._keys.own("memidx")) == IndexState.READY)

    async def _cursor(self) -> tuple[str, int]:
        """The server's run id and the SCAN cursor saved by an earlier run on that same
        server process (a restarted server orders its keys anew: start over)."""
        run_id = str((await self._client.info("server"))["run_id"])
        saved = await self._client.get(self._keys.own("memidxscan"))
        owner, _, cursor = str(saved or "").partition(":")
        return run_id, int(cursor) if owner == run_id and cursor.isdigit() else 0

    async def build_step(self) -> tuple[int, bool]:
        """Index the entries of one SCAN batch; (how many were indexed, whether done)."""
        if await self.ready():
            return 0, True
        run_id, cursor = await self._cursor()
        cursor, keys = await self._client.scan(cursor, match=self._keys.pattern("mem:"), count=_SCAN_COUNT)
        self._progress()
        ids = [self._keys.id_of_key("mem:", str(key)) for key in keys]
        indexed = 0
        for start in range(0, len(ids), _SCRIPT_BATCH):
            indexed += await self._index(ids[start : start + _SCRIPT_BATCH])
            self._progress()
        if cursor == 0:
            await self._client.set(self._keys.own("memidx"), IndexState.READY)
            await self._client.delete(self._keys.own("memidxscan"))
            return indexed, True
        await self._client.set(self._keys.own("memidxscan"), f"{run_id}:{cursor}")
        return indexed, False

    async def _index(self, ids: list[str]) -> int:
        replies = await self._read(keys=[], args=[self._keys.prefix, *ids])
        entries = []
        for id, (flat, revision) in zip(ids, replies, strict=True):
            fields = hash_fields(flat)
            if "title" not in fields:
                continue
            tags = [t for t in fields.get("tags", "").split(",") if t]
            words = entry_terms(id, fields["title"], fields.get("body", ""), tags)
            entries.append(
                {
                    "id": id,
                    "revision": str(revision),
                    "words": words,
                    "type": fields.get("type", ""),
                    "project": fields.get("project", ""),
                    "tags": fields.get("tags", ""),
                }
            )
        if not entries:
            return 0
        keys = [self._keys.own(k) for k in ("memexp", "memexpidx", "memvocab")]
        args = {"prefix": self._keys.prefix, "now": self._clock(), "entries": entries}
        return int(await self._batch(keys=keys, args=[json.dumps(args)]))
