"""Rich progress bars for long work, one bar per phase with its count and rate, silent under --json."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from ._output import err_console

__all__ = ["ProgressCallback", "progress_bars"]


class _Rate(ProgressColumn):
    """Items per second over the last half minute (blank until there are two samples)."""

    def render(self, task: Task) -> Text:
        speed = task.speed
        return Text("" if speed is None else f"{speed:,.1f}/s", style="progress.data.speed")


class ProgressCallback(Protocol):
    def __call__(self, phase: str, done: int, total: int | None) -> None: ...


@contextmanager
def progress_bars(*, enabled: bool) -> Iterator[ProgressCallback]:
    """Yield a callback `(phase, items done now, total if known)` drawing a bar per phase on stderr."""
    tasks: dict[str, TaskID] = {}
    with Progress(
        TextColumn("{task.description:>12}"),
        BarColumn(),
        MofNCompleteColumn(),
        _Rate(),
        TimeElapsedColumn(),
        console=err_console,
        disable=not enabled,
        transient=False,
    ) as bars:

        def advance(phase: str, done: int, total: int | None) -> None:
            if phase not in tasks:
                tasks[phase] = bars.add_task(phase, total=total)
            elif total is not None:
                bars.update(tasks[phase], total=total)
            bars.advance(tasks[phase], done)

        yield advance
