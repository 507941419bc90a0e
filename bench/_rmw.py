"""Lost updates: many MCP sessions doing read-modify-write on one entry, guarded by if_version.

Every session loops: memory_get the counter entry, parse the integer in its body, memory_set
the body to that integer plus one with `if_version` = the revision it read; a `conflict`
reply means someone else wrote first, so it reads again and retries. Compare-and-set is
correct when no applied write is lost: the final counter equals the number of applied
writes (and the revision advanced by exactly as many).
"""

from __future__ import annotations

import re
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import Client

from _mcp import BenchError, call_tool, open_client

RMW_ID = "bench-rmw-counter"
COUNTER = re.compile(r"counter=(\d+)")


def counter_body(value: int) -> str:
    return f"counter={value}"


def parse_counter(body: str) -> int:
    """The integer in a counter entry's body."""
    match = COUNTER.fullmatch(body)
    if match is None:
        raise BenchError(f"{RMW_ID} body is not a counter: {body[:100]!r}")
    return int(match[1])


def counter_write(value: int, if_version: int) -> dict[str, Any]:
    """memory_set arguments writing `value` if the entry is at revision `if_version` (0: new)."""
    return {
        "id": RMW_ID,
        "title": "Read-modify-write counter",
        "body": counter_body(value),
        "type": "reference",
        "tags": ["bench"],
        "source": "bench",
        "if_version": if_version,
    }


@dataclass
class Tally:
    """Shared by the sessions: what has been applied and refused, and when to stop."""

    goal: int
    deadline: float
    applied: int = 0
    conflicts: int = 0
    max_retries: int = 0  # the most conflicts one increment went through before it applied

    def more(self) -> bool:
        """Start another increment? Until `goal` writes applied or the time cap."""
        return self.applied < self.goal and time.monotonic() < self.deadline


async def try_increment(client: Client, tally: Tally) -> bool:
    """One read-modify-write attempt; True if the write applied, False on a conflict."""
    entry = await call_tool(client, "memory_get", {"id": RMW_ID})
    value = parse_counter(str(entry["body"]))
    result = await call_tool(client, "memory_set", counter_write(value + 1, int(entry["revision"])))
    if result.get("ok"):
        tally.applied += 1
        return True
    if result.get("error") == "conflict":
        tally.conflicts += 1
        return False
    raise BenchError(f"memory_set of {RMW_ID} refused: {result}")


async def incrementer(client: Client, tally: Tally) -> None:
    """Increment the counter, retrying each increment on conflict, until the tally says stop.

    An increment still retrying when the tally says stop is abandoned (none of its attempts
    applied), so the run ends within one round of the goal instead of finishing every retry.
    """
    retries = 0
    while tally.more():
        if await try_increment(client, tally):
            tally.max_retries = max(tally.max_retries, retries)
            retries = 0
        else:
            retries += 1


async def run_incrementers(clients: list[Client], tally: Tally) -> float:
    """All sessions at once, one task each; the wall time in seconds."""
    started = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for client in clients:
            tasks.start_soon(incrementer, client, tally)
    return time.perf_counter() - started


async def lost_updates(url: str, sessions: int, writes: int, cap_s: float) -> dict[str, Any]:
    """Create the counter at 0, let `sessions` sessions increment it ~`writes` times, then check it.

    Sessions stop starting increments once `writes` have applied or `cap_s` has passed; the
    ones in flight finish, so `applied` may end a little above `writes`.
    """
    async with AsyncExitStack() as stack:
        clients = [await open_client(stack, url) for _ in range(sessions)]
        created = await call_tool(clients[0], "memory_set", counter_write(0, 0))
        if not created.get("ok"):
            raise BenchError(f"could not create {RMW_ID}: {created}")
        tally = Tally(goal=writes, deadline=time.monotonic() + cap_s)
        elapsed = await run_incrementers(clients, tally)
        final = await call_tool(clients[0], "memory_get", {"id": RMW_ID})
        await call_tool(clients[0], "memory_delete", {"id": RMW_ID})
    counter = parse_counter(str(final["body"]))
    return {
        "sessions": sessions,
        "goal": writes,
        "applied": tally.applied,
        "conflicts": tally.conflicts,
        "max_retries": tally.max_retries,
        "capped": tally.applied < writes,
        "cap_s": cap_s,
        "final_counter": counter,
        "revisions": int(final["revision"]) - int(created["revision"]),
        "lost_updates": tally.applied - counter,
        "elapsed_s": elapsed,
        "writes_per_s": tally.applied / elapsed,
        "attempts_per_write": (tally.applied + tally.conflicts) / max(tally.applied, 1),
    }
