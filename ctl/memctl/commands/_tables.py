"""Tables that fit the terminal: columns fold, and the least needed ones give way first."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ._output import console

__all__ = ["Column", "fitted_table"]

_EDGES = 3  # a column's border and padding
_FOLDED = 20  # a column that folds needs this many characters to be read easily


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: `whole` values (numbers, times) are never folded; a column with a
    `drop` rank gives way, highest rank first, when the terminal is too narrow for all."""

    header: str
    whole: bool = False
    drop: int = 0


def _cell_width(cell: RenderableType) -> int:
    if isinstance(cell, Text):
        return cell.cell_len
    return Text.from_markup(cell).cell_len if isinstance(cell, str) else _FOLDED


def fitted_table(
    title: str, columns: Sequence[Column], rows: Iterable[Sequence[RenderableType]], *, header: bool = True
) -> Table:
    """A table of `rows` no wider than the terminal; the columns that did not fit are named
    in its caption (--json has every field)."""
    rows = [list(row) for row in rows]
    width = console.size.width

    def need(index: int) -> int:
        column = columns[index]
        header = max(len(word) for word in column.header.split())  # a header wraps between words
        widest = max((_cell_width(row[index]) for row in rows), default=0)
        return max(header, widest if column.whole else min(widest, _FOLDED)) + _EDGES

    kept = list(range(len(columns)))
    for index in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: -columns[i].drop):
        if sum(need(i) for i in kept) + 1 <= width:
            break
        kept.remove(index)
    dropped = [c.header for i, c in enumerate(columns) if i not in kept]
    caption = f"not shown at {width} columns: {', '.join(dropped)} (see --json)" if dropped else None
    table = Table(
        title=title, title_justify="left", caption=caption, caption_justify="left", show_header=header
    )
    for index in kept:
        whole = columns[index].whole
        table.add_column(columns[index].header, overflow="ellipsis" if whole else "fold", no_wrap=whole)
    for row in rows:
        table.add_row(*(row[i] for i in kept))
    return table
