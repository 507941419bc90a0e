"""What `memctl init` and `memctl projects add` share: the options that describe a project."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import ValidationError

from memory_bridge import ConfigError, check_workspace

from ..provision._clients import ALL_CLIENTS
from ..provision._inventory import Project
from ..provision._provision import slug_for

F = TypeVar("F", bound=Callable[..., Any])


def project_options(function: F) -> F:
    """--slug, --mode and --client."""
    for option in reversed(
        [
            click.option("--slug", help="The project's name in memctl (default: from the directory name)."),
            click.option(
                "--mode", type=click.Choice(["embedded", "stack"]), default="embedded", show_default=True
            ),
            click.option(
                "--client",
                "clients",
                multiple=True,
                type=click.Choice(sorted(ALL_CLIENTS)),
                help="Client configuration `memctl up` writes (repeatable; default: all).",
            ),
        ]
    ):
        function = option(function)
    return function


def build_project(workspace: Path, slug: str | None, clients: tuple[str, ...], **fields: Any) -> Project:
    """The project the options describe; `ConfigError` naming the option when one is wrong
    (as an inventory's loader does for the same field)."""
    check_workspace(workspace)
    if clients:
        fields["clients"] = clients
    try:
        return Project(slug=slug or slug_for(workspace), workspace=str(workspace), **fields)
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise ConfigError(f"{'.'.join(map(str, problem['loc']))}: {problem['msg']}") from exc
