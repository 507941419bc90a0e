"""Option decorators several commands share."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["project_option"]

project_option = click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project directory (default: current).",
)
