"""Option decorators several commands share."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import click

__all__ = ["Duration", "project_option"]

project_option = click.option(
    "--project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Project directory (default: the nearest one at or above the current directory with a .memory/).",
)


class Duration(click.ParamType[float]):
    """A span of time such as 90s, 30m, 24h, 7d or 0 (seconds when no unit is given)."""

    name = "duration"
    _UNITS: ClassVar[dict[str, int]] = {"s": 1, "m": 60, "h": 3600, "d": 86400}

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        text = str(value).strip().lower()
        unit = self._UNITS.get(text[-1:], None)
        number = text[:-1] if unit else text
        try:
            seconds = float(number) * (unit or 1)
        except ValueError:
            self.fail(f"{value!r} is not a duration; use e.g. 90s, 30m, 24h or 7d", param, ctx)
        if seconds < 0:
            self.fail(f"{value!r}: a duration cannot be negative", param, ctx)
        return seconds
