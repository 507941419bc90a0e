"""`memctl token rotate`: a new bridge bearer token, the old one valid for a grace period."""

from __future__ import annotations

from pathlib import Path

import click

from memory_bridge import NotFound, find_project, load_settings, rotate_token

from .._timefmt import iso_time
from ..provision._project import current_project
from ._options import Duration, project_option
from ._output import console, emit_json, json_option

DEFAULT_TOKEN_FILE = Path(".memory") / "bridge.token"


@click.group()
def token() -> None:
    """Manage the bearer token the HTTP bridge requires."""


def _when(epoch: float | None) -> str | None:
    return iso_time(epoch)


@token.command("rotate")
@project_option
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Token file to rotate (default: the project's token_file setting, else .memory/bridge.token).",
)
@click.option(
    "--grace",
    type=Duration(),
    default="24h",
    show_default=True,
    help="How long the replaced token keeps working (e.g. 30m, 24h, 7d; 0 ends it at once).",
)
@click.option("--show", is_flag=True, help="Print the new token (it is never printed otherwise).")
@json_option
def rotate_command(
    project: Path | None, token_file: Path | None, grace: float, show: bool, as_json: bool
) -> None:
    """Issue a new bearer token into the token file (mode 0600).

    A running bridge picks the new token up on its next request, without a restart,
    and keeps accepting the replaced one until the grace period ends, so clients can
    switch over without an outage. Replaced tokens and the end of their grace are kept
    in `<token file>.previous` (mode 0600). With no token file yet, one is created.
    Outside a project (no `.memory/` here or above) it refuses unless --project or
    --token-file names where the token belongs.

    \b
    Example:
      memctl token rotate
      memctl token rotate --project ~/src/app --grace 1h --json
    """
    settings = load_settings(project=current_project(project))
    path = token_file or settings.serve.token_file
    if path is None:
        if project is None and find_project(Path.cwd()) is None:
            raise NotFound(
                f"no memctl project at or above {Path.cwd()} (no .memory/ directory), so no token "
                "to rotate; nothing was created: run it in a project, or name one with --project DIR "
                "(or the file with --token-file FILE)"
            )
        path = settings.project / DEFAULT_TOKEN_FILE
    rotation = rotate_token(path, grace)
    result: dict[str, object] = {
        "ok": True,
        "changed": True,
        "token_file": str(rotation.token_file),
        "previous_file": str(rotation.previous_file),
        "replaced": rotation.replaced,
        "previous_valid_until": _when(rotation.grace_until),
        "previous_tokens_valid": rotation.still_valid,
    }
    if show:
        result["token"] = rotation.token
    if as_json:
        emit_json(result)
        return
    console.print(f"new token written to {rotation.token_file}")
    if rotation.grace_until is not None:
        console.print(f"the replaced token works until {_when(rotation.grace_until)}")
    elif rotation.replaced:
        console.print("the replaced token no longer works")
    if show:
        console.print(rotation.token, markup=False, highlight=False)
