"""The compact-entries step of `memctl maintain`: entry compaction on the project's entry store.

The work is `memory_bridge.maintenance.compact_entries`; this maps its outcome onto the job's step
record: `ok` (or `dry-run`) for memory-mcp's OK, `failed` with the reason for BUDGET,
TRUNCATED, PARTIAL and a store that fails (MCP), `timeout` past the step timeout. The step's
`exit_code` is memory-mcp's exit code for the outcome; LOCKED is the job's own lock.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from memory_bridge import Settings, StoreError
from memory_bridge.maintenance import COMPACT_EXIT_CODES, StepRecord, compact_entries, undo_compaction
from memory_bridge.stores import entry_store_scheme, open_entry_store, sqlite_path

__all__ = ["NAME", "compact_step", "undo_entries"]

NAME = "compact-entries"


async def compact_step(
    settings: Settings,
    *,
    dry_run: bool,
    budget: float,
    timeout: float,
    changes: list[dict[str, Any]],
    actions: dict[str, list[dict[str, Any]]],
) -> StepRecord:
    """Run compaction once; its undo is appended to `changes` as it writes."""
    started = time.monotonic()

    def took() -> float:
        return round(time.monotonic() - started, 3)

    if entry_store_scheme(settings.stores.entry_store) == "sqlite" and not sqlite_path(settings).exists():
        detail = "nothing to do: no entry store yet (nothing has saved an entry)"
        return StepRecord(NAME, "dry-run" if dry_run else "ok", took(), detail=detail, exit_code=0)
    store = open_entry_store(settings)
    try:
        with anyio.fail_after(timeout):
            report = await compact_entries(
                store,
                budget=budget,
                max_entries=settings.maintain.compact_max_entries,
                dry_run=dry_run,
                changes=changes,
            )
    except TimeoutError:
        return StepRecord(NAME, "timeout", took(), error=f"timed out after {timeout:g} s")
    except StoreError as exc:
        code = COMPACT_EXIT_CODES["store"]
        return StepRecord(NAME, "failed", took(), error=f"store: {exc}", exit_code=code)
    finally:
        await store.close()
    actions[NAME] = report.actions
    detail = ("would: " if dry_run else "") + report.detail
    if report.outcome == "ok":
        return StepRecord(NAME, "dry-run" if dry_run else "ok", took(), detail=detail, exit_code=0)
    error = f"{report.outcome}: {'; '.join(report.errors)}"
    return StepRecord(NAME, "failed", took(), detail=detail, error=error, exit_code=report.exit_code)


def undo_entries(settings: Settings, changes: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """Write back the entries a run's compaction changed: (restored, ids left as they are)."""

    async def restore() -> tuple[int, list[str]]:
        store = open_entry_store(settings)
        try:
            return await undo_compaction(store, changes)
        finally:
            await store.close()

    return anyio.run(restore)
