"""Entry compaction: the link graph between entries, `## Referenced by` blocks and stubs.

memory-mcp 1.3's compaction, done on the entry store itself:

- **Links.** Entry A links to entry B (another live entry) when A's body, without its
  managed backlink block, names B's id as a whole token (ids of letters, digits and
  `. _ : / @ + -`; a trailing `.`, `:` or `-` of a sentence does not count as part of the
  token), or as `[[B]]`. A bare mention counts only for an id with a separator in it
  (`deploy:blue`, `auth/login`), so a one-word id such as `postgres` is linked only by
  `[[postgres]]`.
- **Backlinks.** Each entry some others link to ends with one managed block (`## Referenced
  by`, a marker line, then `- \\`id\\`: title` per referencing entry, sorted by id); one
  no longer linked to loses its block. Only the block is ever rewritten.
- **Stubs.** A `[[X]]` naming no entry (and no deleted one: a deletion is deliberate) creates
  a stub entry X (type `stub`) holding a line of explanation and its backlink block.

Every write is a compare-and-set on the revision read (`if_version`), with a fresh
`operation_id`. A conflict (an agent wrote meanwhile) is retried once, on the entry as the
agent left it; a second conflict leaves the agent's write and is reported. Before each write
its undo is appended to the caller's `changes` (`undo_compaction` writes them back, unless
the entry changed since). Outcomes, with memory-mcp's exit codes: `ok` 0, `budget` 2 (the
time budget ran out: what was written stays, the next run goes on), `truncated` 3 (the store
holds more entries than the census takes: nothing is written), `partial` 4 (some writes were
refused). A store that fails raises `StoreError` (memory-mcp's 1).
"""

from __future__ import annotations

import math
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..stores._base import Entry, EntryStore, EntryWrite

__all__ = [
    "COMPACT_EXIT_CODES",
    "CompactReport",
    "compact_entries",
    "strip_backlinks",
    "undo_compaction",
]

CompactOutcome = Literal["ok", "budget", "truncated", "partial"]
COMPACT_EXIT_CODES: dict[str, int] = {"ok": 0, "store": 1, "budget": 2, "truncated": 3, "partial": 4}
"""memory-mcp's compaction exit codes, by outcome (`store`: the store failed; its LOCKED, 5, is
the maintenance lock of the caller)."""

HEADING = "## Referenced by"
MARKER = "<!-- managed by memctl maintain (compact-entries): rewritten on each run -->"
MAX_LISTED = 200  # referencing entries listed in one block; the rest are counted
BODY_MAX = 262_144  # the entry tools' limit on a body
STUB_TYPE = "stub"
STUB_SOURCE = "memctl-maintain"
_STUB_TEXT = (
    "Stub created by memctl maintain: other entries link to [[{id}]] but no entry had this id. "
    "Replace this text with what the entry should say; the block below is kept up to date."
)

_BLOCK = re.compile(
    rf"\n*^{re.escape(HEADING)}[ \t]*\n+{re.escape(MARKER)}[ \t]*\n?(?:^- .*(?:\n|\Z))*", re.MULTILINE
)
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]*")
_WIKI = re.compile(r"\[\[([^\[\]\n]{1,256})\]\]")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,255}")
_SEPARATORS = frozenset("._:/@+-")


def strip_backlinks(body: str) -> tuple[str, bool]:
    """The body without its managed `## Referenced by` block, and whether it had one."""
    parts = _BLOCK.split(body)
    if len(parts) == 1:
        return body, False
    return "\n\n".join(p.strip("\n") for p in parts if p.strip("\n")), True


def _mentions(body: str, ids: Mapping[str, object]) -> tuple[set[str], set[str]]:
    """Ids of live entries `body` names, and `[[x]]` names of no live entry."""
    named: set[str] = set()
    for token in _TOKEN.findall(body):
        for candidate in (token, token.rstrip(".:-")):
            if candidate in ids and _SEPARATORS.intersection(candidate):
                named.add(candidate)
    dangling: set[str] = set()
    for link in _WIKI.findall(body):
        link = link.strip()
        if link in ids:
            named.add(link)
        elif _ID.fullmatch(link):
            dangling.add(link)
    return named, dangling


def _block(referrers: Sequence[tuple[str, str]]) -> str:
    lines = [f"- `{rid}`: {' '.join(title.split())}" for rid, title in referrers[:MAX_LISTED]]
    if len(referrers) > MAX_LISTED:
        lines.append(f"- and {len(referrers) - MAX_LISTED} more")
    return "\n".join([HEADING, "", MARKER, *lines])


def _with_block(body: str, referrers: Sequence[tuple[str, str]]) -> str:
    """`body` with its managed block as `referrers` say (the same body when nothing changes)."""
    stripped, had = strip_backlinks(body)
    if not referrers:
        return stripped.rstrip() if had else body
    text = stripped.rstrip()
    return f"{text}\n\n{_block(referrers)}" if text else _block(referrers)


@dataclass
class _Census:
    live: dict[str, tuple[Entry, int, float | None]]  # id -> entry, revision, expires_at
    deleted: set[str]


@dataclass
class _Plan:
    action: Literal["backlinks", "stub"]
    id: str
    referrers: list[tuple[str, str]]  # (id, title), sorted by id
    project: str = ""


@dataclass
class CompactReport:
    """What one compaction did (or, dry, would do): an action per entry written."""

    outcome: CompactOutcome = "ok"
    entries: int = 0
    links: int = 0
    actions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pending: int = 0  # writes left undone when the budget ran out

    @property
    def exit_code(self) -> int:
        return COMPACT_EXIT_CODES[self.outcome]

    @property
    def detail(self) -> str:
        if self.outcome == "truncated":
            return f"more than {self.entries} entries: the census stopped there"
        counts: dict[str, int] = {}
        for action in self.actions:
            counts[action["action"]] = counts.get(action["action"], 0) + 1
        done = ", ".join(f"{n} {a}" for a, n in sorted(counts.items())) or "nothing to do"
        return f"{self.entries} entries, {self.links} links: {done}"


async def _census(store: EntryStore, max_entries: int) -> _Census | None:
    census = _Census({}, set())
    async for batch in store.export_records():
        for record in batch:
            if record.entry is None:
                census.deleted.add(record.id)
                continue
            census.live[record.id] = (record.entry, record.revision, record.expires_at)
            if len(census.live) > max_entries:
                return None
    return census


def _plan(census: _Census) -> tuple[list[_Plan], int]:
    """Every write that brings the store in line with its link graph, and the number of links."""
    referrers: dict[str, set[str]] = {}
    for source, (entry, _, _) in census.live.items():
        named, dangling = _mentions(strip_backlinks(entry.body)[0], census.live)
        for target in (named | (dangling - census.deleted)) - {source}:
            referrers.setdefault(target, set()).add(source)
    links = sum(len(s) for s in referrers.values())

    def listed(target: str) -> list[tuple[str, str]]:
        return [(rid, census.live[rid][0].title) for rid in sorted(referrers.get(target, ()))]

    plans = []
    for id in sorted(set(census.live) | set(referrers)):
        if id not in census.live:
            projects = {census.live[r][0].project for r in referrers[id]}
            plans.append(_Plan("stub", id, listed(id), projects.pop() if len(projects) == 1 else ""))
        elif _with_block(census.live[id][0].body, listed(id)) != census.live[id][0].body:
            plans.append(_Plan("backlinks", id, listed(id)))
    return plans, links


def _ttl(expires_at: float | None, now: float) -> int | None:
    """The seconds an entry has left, so a rewrite keeps its expiry (None: it has none)."""
    return None if expires_at is None else max(1, math.ceil(expires_at - now))


def _write_of(entry: Entry, body: str) -> EntryWrite:
    return EntryWrite(entry.id, entry.title, body, entry.type, entry.tags, entry.source, entry.project)


def _stub(plan: _Plan) -> EntryWrite:
    body = f"{_STUB_TEXT.format(id=plan.id)}\n\n{_block(plan.referrers)}"
    return EntryWrite(plan.id, plan.id, body, STUB_TYPE, (STUB_TYPE,), STUB_SOURCE, plan.project)


async def _apply(
    store: EntryStore,
    plan: _Plan,
    census: _Census,
    changes: list[dict[str, Any]],
) -> dict[str, Any] | str:
    """One planned write, compare-and-set, a conflict retried once on the entry as it is now:
    the action done, or the reason it was not."""
    found = census.live.get(plan.id)
    entry, revision, expires_at = (None, 0, None) if found is None else found
    for attempt in (1, 2):
        if entry is None:
            write = _stub(plan)
        else:
            body = _with_block(entry.body, plan.referrers)
            if body == entry.body:
                return {"action": "unchanged", "id": plan.id, "retried": attempt > 1}
            if len(body) > BODY_MAX:
                return f"{plan.id}: the backlink block would take the body over {BODY_MAX} characters"
            write = _write_of(entry, body)
        undo = {
            "id": plan.id,
            "before": None if entry is None else entry.to_dict(),
            "expires_at": expires_at,
            "body": write.body,
            "revision": None,
        }
        changes.append(undo)
        outcome = await store.set(
            write, ttl=_ttl(expires_at, time.time()), if_version=revision, operation_id=str(uuid.uuid4())
        )
        if outcome.status == "applied":
            undo["revision"] = outcome.revision
            action = "stub" if entry is None else "backlinks"
            return {"action": action, "id": plan.id, "referencedBy": [r for r, _ in plan.referrers]} | (
                {"retried": True} if attempt > 1 else {}
            )
        changes.pop()
        if attempt == 2:
            break
        current = await store.get(plan.id)  # counts a hit, as memory-mcp's census over memory_get did
        if current is None:  # deleted meanwhile: a deletion is deliberate, no stub takes its place
            return {"action": "unchanged", "id": plan.id, "retried": True}
        entry, revision = current
        if entry.ttl:
            # written meanwhile with an expiry, whose moment only the census reads: next run
            return f"{plan.id}: changed during compaction and expires; left for the next run"
        expires_at = None
    return f"{plan.id}: changed by someone else twice during compaction; their version is kept"


async def compact_entries(
    store: EntryStore,
    *,
    budget: float,
    max_entries: int,
    dry_run: bool,
    changes: list[dict[str, Any]],
    clock: Callable[[], float] = time.monotonic,
) -> CompactReport:
    """Bring the store's backlink blocks and stubs in line with its link graph, within
    `budget` seconds (from the call); see the module docstring for the rules and outcomes."""
    started = clock()
    report = CompactReport()
    census = await _census(store, max_entries)
    if census is None:
        report.outcome = "truncated"
        report.entries = max_entries
        report.errors.append(
            f"the entry store holds more than {max_entries} entries (compact_max_entries); nothing written"
        )
        return report
    report.entries = len(census.live)
    plans, report.links = _plan(census)
    if dry_run:
        report.actions = [
            {"action": p.action, "id": p.id, "referencedBy": [r for r, _ in p.referrers]} for p in plans
        ]
        return report
    for index, plan in enumerate(plans):
        if clock() - started >= budget:
            report.outcome, report.pending = "budget", len(plans) - index
            report.errors.append(
                f"the {budget:g} s budget ran out with {report.pending} of {len(plans)} writes left "
                "(compact_budget_seconds, --compact-budget); the next run goes on"
            )
            return report
        done = await _apply(store, plan, census, changes)
        if isinstance(done, str):
            report.errors.append(done)
        elif done["action"] != "unchanged":
            report.actions.append(done)
    if report.errors:
        report.outcome = "partial"
    return report


async def undo_compaction(store: EntryStore, changes: Iterable[Mapping[str, Any]]) -> tuple[int, list[str]]:
    """Write back each entry as it was before a compaction (newest change first), compare-and-set
    on the revision the compaction wrote; a stub it created is deleted. An entry changed since
    (or gone) is left as it is: (entries restored, ids left)."""
    restored, left = 0, []
    for change in reversed(list(changes)):
        id = str(change["id"])
        current = await store.get(id)
        if current is None or change["revision"] is None or current[1] != change["revision"]:
            left.append(id)
            continue
        before = change["before"]
        if before is None:
            await store.delete(id)
        else:
            write = EntryWrite(
                id,
                before["title"],
                before["body"],
                before["type"],
                tuple(before["tags"]),
                before["source"],
                before["project"],
            )
            outcome = await store.set(
                write,
                ttl=_ttl(change.get("expires_at"), time.time()),
                if_version=current[1],
                operation_id=str(uuid.uuid4()),
            )
            if outcome.status != "applied":
                left.append(id)
                continue
        restored += 1
    return restored, left
