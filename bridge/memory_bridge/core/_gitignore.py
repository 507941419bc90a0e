"""Which workspace paths git ignores, asked of git itself (`git check-ignore`).

Git is the one reader of `.gitignore` that is right by definition: nested files,
negations, `info/exclude` and the user's `core.excludesFile` all count, and a tracked file
is not ignored. The question is one `git check-ignore --stdin -z` per batch, run as an
async subprocess (the event loop never waits on it) under a deadline. The repository's own
`core.fsmonitor` hook is switched off, so asking never runs a command the workspace names.

A workspace with no `.git` at or above it is no work tree and ignores nothing. When git
cannot answer for a work tree (not installed, timed out, refused the repository) the
answer is `Unanswered`, and the caller refuses the paths rather than guess.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["GIT_SECONDS", "Unanswered", "git_ignored"]

GIT_SECONDS = 10.0  # git check-ignore gives up after this


@dataclass(frozen=True, slots=True)
class Unanswered:
    """Git could not say which paths it ignores; `reason` says why, for each refusal."""

    reason: str


def _in_work_tree(root: Path) -> bool:
    """True when `root` or a directory above it has a `.git` (a directory, or a worktree's file)."""
    return any(os.path.lexists(directory / ".git") for directory in (root, *root.parents))


async def git_ignored(root: Path, paths: Sequence[str]) -> set[str] | Unanswered:
    """The members of `paths` (POSIX, relative to `root`) that git ignores."""
    if not paths or not await anyio.to_thread.run_sync(_in_work_tree, root):
        return set()
    command = ["git", "-c", "core.fsmonitor=false", "-C", str(root), "check-ignore", "--stdin", "-z"]
    stdin = b"".join(os.fsencode(path) + b"\0" for path in paths)
    try:
        with anyio.fail_after(GIT_SECONDS):
            code, out, err = await _run(command, stdin)
    except TimeoutError:
        return Unanswered(f"git check-ignore did not answer within {GIT_SECONDS:g} s")
    except FileNotFoundError:
        return Unanswered("git is not installed, so whether .gitignore ignores it cannot be told")
    if code in (0, 1):  # 1: none of them is ignored
        return {os.fsdecode(name) for name in out.split(b"\0") if name}
    problem = err.decode("utf-8", "replace").strip()
    first = problem.splitlines()[0] if problem else f"exit status {code}"
    return Unanswered(f"git check-ignore failed ({first.removeprefix('fatal: ')})")


async def _run(command: list[str], data: bytes) -> tuple[int, bytes, bytes]:
    """Exit status, stdout and stderr of `command` fed `data`: written while both outputs
    are read (no pipe can fill up and stall either side), and a process that exits
    without reading it all is an answer, not an error. Cancelling kills the process."""
    outputs: dict[int, bytes] = {}

    async def feed(stream: ByteSendStream) -> None:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.send(data)
        await stream.aclose()

    async def drain(index: int, stream: ByteReceiveStream) -> None:
        outputs[index] = b"".join([chunk async for chunk in stream])

    async with await anyio.open_process(command) as process:
        assert process.stdin and process.stdout and process.stderr  # pipes, by default
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(feed, process.stdin)
            tasks.start_soon(drain, 1, process.stdout)
            tasks.start_soon(drain, 2, process.stderr)
        code = await process.wait()
    return code, outputs[1], outputs[2]
