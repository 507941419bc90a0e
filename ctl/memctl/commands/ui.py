"""`memctl ui`: serve the local web view of a project's memory on 127.0.0.1."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import click
import uvicorn

from memory_bridge import ConfigError, Settings, bound_socket, read_token_file

from ..operations._lookup import item_stores
from ..provision._project import provisioned_settings
from ..ui import Auth, create_app
from ._options import project_option
from ._output import emit_json, json_option

_HOST = "127.0.0.1"


def _project_token(settings: Settings) -> str:
    token = settings.bearer_token()
    if token is None:
        default = settings.memory_dir / "bridge.token"
        if not default.is_file():
            raise ConfigError(
                f"the web view needs the project token, and {settings.project} has none: "
                "run `memctl up` or `memctl token rotate` first"
            )
        token = read_token_file(default)
    return token.get_secret_value()


async def _check_stores(settings: Settings) -> None:
    """Fail here, as a memctl error, rather than inside the server's start-up."""
    async with item_stores(settings) as stores:
        await stores.entries.ping()
        await stores.knowledge.ping()


@click.command()
@project_option
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 to serve on (0: any free port).",
)
@json_option
def ui(project: Path | None, port: int, as_json: bool) -> None:
    """Serve a web view to read and correct this project's memory, on 127.0.0.1, until Ctrl-C.

    It lists and searches entries and knowledge (ranked as memctl search ranks them),
    shows an entry's history as diffs with a roll-back button (compare-and-set: an
    agent's newer write is never overwritten), a document's metadata with disable,
    enable and delete, lessons by error pattern, the capture log and the status of the
    stores. It needs the project token: open the one-time login link printed at start
    (valid for ten minutes), or log in with the token itself. Pages work without
    JavaScript and load nothing from anywhere else. With --json, the address is printed
    as one JSON object before serving.

    \b
    Example:
      memctl ui
      memctl ui --project ~/src/app --port 8765
    """
    settings = provisioned_settings(project)
    auth = Auth(_project_token(settings))
    anyio.run(_check_stores, settings)
    sock = bound_socket(_HOST, port, hint="; pick another --port")
    sock.listen(128)
    bound = sock.getsockname()[1]
    url = f"http://{_HOST}:{bound}/"
    login = f"{url}login?code={auth.login_code}"
    if as_json:
        emit_json({"url": url, "login_url": login, "project": str(settings.project)})
    else:
        click.echo(f"memctl ui: {settings.project} at {url}")  # not rich: a URL must never wrap
        click.echo(f"log in (one-time link, 10 minutes): {login}")
        click.echo("stop with Ctrl-C")
    sys.stdout.flush()
    app = create_app(settings, auth, cookie=f"memctl_ui_{bound}")
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
