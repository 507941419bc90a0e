"""One script run once per shard of a store, in as few round trips as the client allows.

A cluster store's search asks each of its shards (`_keys.SHARDS`, spread over the nodes)
and fetches its page from several; as separate calls, the client's own work per call
(routing, a task and a connection each, a reply to parse) made most of a search's bridge
time. One pipeline sends every shard's call, each node's in one write, and reads the
replies in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Call", "run_all"]

Call = tuple[list[str], list[str]]  # a script's KEYS and ARGV


async def run_all(client: Any, script: Any, calls: Sequence[Call]) -> list[Any]:
    """`script`'s reply to each call, in order: a single call as it is, more in one
    pipeline; the script is loaded where a node lacks it (a node restarted, or new)."""
    if len(calls) == 1:
        keys, args = calls[0]
        return [await script(keys=keys, args=args)]
    from valkey.exceptions import NoScriptError  # imported with the client, on first use

    replies: list[Any] = []
    for attempt in range(2):
        pipe = client.pipeline(transaction=False)
        for keys, args in calls:
            # the command itself: a cluster pipeline blocks its evalsha method (the script is
            # loaded here instead), not the command, which it routes by the keys' slot
            pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        replies = await pipe.execute(raise_on_error=False)
        if attempt or not any(isinstance(reply, NoScriptError) for reply in replies):
            break
        await client.script_load(script.script)
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    return replies
