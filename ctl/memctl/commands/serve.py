"""`memctl serve`: run the MCP bridge for one project."""

from __future__ import annotations

import os
from pathlib import Path

import click

from memory_bridge import ConfigError, load_settings, run_bridge

from ..provision._project import provisioned_settings
from ._options import project_option

BRIDGE_TOKEN = "bridge.token"  # written by the provisioning playbook's bridge role


@click.command()
@project_option
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP at /mcp instead of stdio.")
@click.option("--host", help="Address to bind with --http (default 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), help="Port to bind with --http (default 3106).")
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    help="Processes serving --http on one port (default 1); above 1, MCP over HTTP is stateless.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="File (mode 0600) with the bearer token required on POST /mcp "
    "(default with --http: the project's .memory/bridge.token, if `memctl up` made one).",
)
@click.option(
    "--entry-store",
    help="Entry store URL: sqlite (default), sqlite:///path, valkey://host:port/db, valkeys://...",
)
@click.option(
    "--knowledge-store",
    help="Knowledge store URL: sqlite (default), sqlite:///path, dify+https://host/v1, dify+http://host/v1",
)
@click.option(
    "--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]), help="Bridge log level."
)
def serve(
    project: Path | None,
    use_http: bool,
    host: str | None,
    port: int | None,
    workers: int | None,
    token_file: Path | None,
    entry_store: str | None,
    knowledge_store: str | None,
    log_level: str | None,
) -> None:
    """Serve a project's memory to MCP clients.

    On stdio (the default) one client talks to this process; with --http, any
    number of clients use POST /mcp, and GET /health and GET /metrics are served;
    --workers N runs N processes on the one port (each worker's /metrics counts
    its own calls).
    A non-loopback --host needs --token-file.

    Without --project, the project is the nearest directory at or above the current
    one that holds a .memory/ directory (so a client started anywhere in the project
    finds it); with --project, a directory without one gets new, empty stores. The
    project's scope is pinned in .memory/config.toml on first use.

    \b
    Example:
      memctl serve --project ~/src/app
      memctl serve --project ~/src/app --http --port 3106 --token-file ~/.memctl-token
      memctl serve --project ~/src/app --http --workers 2
      memctl serve --knowledge-store dify+http://127.0.0.1/v1
    """
    if workers is not None and not use_http:
        raise ConfigError("--workers needs --http: on stdio one process serves its one client")
    try:
        options = {
            "host": host,
            "port": port,
            "workers": workers,
            "token_file": token_file,
            "entry_store": entry_store,
            "knowledge_store": knowledge_store,
            "log_level": log_level,
        }
        explicit = project is not None or bool(os.environ.get("MEMCTL_PROJECT"))
        settings = (
            load_settings(project=project, **options) if explicit else provisioned_settings(None, **options)
        )
        provisioned = settings.memory_dir / BRIDGE_TOKEN
        if use_http and settings.bearer_token() is None and provisioned.is_file():
            serve = settings.serve.model_copy(update={"token_file": provisioned})
            settings = settings.model_copy(update={"serve": serve})
        run_bridge(settings, http=use_http)
    except KeyboardInterrupt:
        pass
