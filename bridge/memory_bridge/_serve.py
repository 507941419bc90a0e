"""Running the bridge: on stdio for one client, or on streamable HTTP for many."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import anyio
import uvicorn

from ._backends import Backend, BackendWatch
from ._errors import ConfigError, StoreError
from ._http import build_http_app, is_loopback
from ._identity import pin_scope
from ._metrics import Metrics
from ._server import build_server
from ._settings import Settings
from ._tokens import token_source
from .core._recall import RecallStamper
from .stores._url import make_embedder, open_entry_store, open_knowledge_store
from .tools._state import AppState

__all__ = ["open_state", "run_bridge", "serve_http", "serve_stdio"]

log = logging.getLogger("memctl.bridge")
ENTRY_EMBED_INTERVAL_SECONDS = 2.0
STARTUP_GRACE_SECONDS = 1.0


@asynccontextmanager
async def open_state(settings: Settings) -> AsyncIterator[AppState]:
    """Open the store for the settings' project, sweep expired entries while it is open.

    Serving a project pins its scope (`_identity.pin_scope`) once its stores exist."""
    if not settings.redact_entries:
        log.warning(
            "redact_entries is false: memory_set stores secrets verbatim (memory-mcp's behaviour); "
            "anyone who can read the entry store or a backup of it reads them"
        )
    embedder = make_embedder(settings)  # one model, shared by both stores
    store = open_entry_store(settings, embedder)
    try:
        knowledge = open_knowledge_store(settings, embedder)
        try:
            settings = await anyio.to_thread.run_sync(pin_scope, settings)
            watch = BackendWatch(
                [Backend("entry", store.url, store.ping), Backend("knowledge", knowledge.url, knowledge.ping)]
            )
            recalls = RecallStamper(
                knowledge,
                debounce_seconds=settings.recall_stamp_debounce_hours * 3600,
                timeout_seconds=settings.tool_timeout_seconds,
            )
            state = AppState(settings, store, Metrics(), knowledge, watch, recalls)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(state.backends.run)
                tasks.start_soon(recalls.run)
                tasks.start_soon(_sweep_forever, state)
                tasks.start_soon(_embed_entries_forever, state)
                yield state
                tasks.cancel_scope.cancel()
        finally:
            await knowledge.close()
    finally:
        await store.close()


async def _sweep_forever(state: AppState) -> None:
    """Drop expired entries; re-embed passages a model change left behind."""
    await anyio.sleep(STARTUP_GRACE_SECONDS)  # let the first client's requests go first
    while True:
        try:
            await state.store.sweep()
        except StoreError as exc:
            log.warning("sweeping expired entries failed: %s", exc)
        await anyio.sleep(state.settings.sweep_interval_seconds)
        try:
            await state.knowledge.upkeep()
        except StoreError as exc:
            log.warning("knowledge upkeep failed: %s", exc)


async def _embed_entries_forever(state: AppState) -> None:
    """Give new and changed entries their vectors soon after they are written."""
    while True:
        await anyio.sleep(ENTRY_EMBED_INTERVAL_SECONDS)
        try:
            await state.store.upkeep()
        except StoreError as exc:
            log.warning("embedding entries failed: %s", exc)


async def serve_stdio(settings: Settings) -> None:
    """Speak MCP on stdin/stdout until the client closes the stream."""
    async with open_state(settings) as state:
        await build_server(state).run_stdio_async()


def check_bind(settings: Settings, tokens: Sequence[str]) -> None:
    """Refuse a non-loopback address without a bearer token."""
    if not tokens and not is_loopback(settings.host):
        raise ConfigError(
            f"refusing to serve on {settings.host} without a bearer token: anyone who can reach it could "
            "read and change this project's memory; pass --token-file (or bind 127.0.0.1)"
        )


async def serve_http(settings: Settings) -> None:
    """Serve streamable HTTP at /mcp, with /health and /metrics, until interrupted."""
    tokens = token_source(settings)
    check_bind(settings, tokens.current())
    async with open_state(settings) as state:
        app = build_http_app(state, build_server(state), tokens)
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            log_level=settings.log_level.lower(),
            access_log=False,
            lifespan="on",
        )
        server = uvicorn.Server(config)
        print(
            f"memctl bridge: project {settings.project}, store {state.store.url}, "
            f"auth {'on' if tokens.current() else 'off'}, http://{settings.host}:{settings.port}/mcp",
            file=sys.stderr,
            flush=True,
        )
        await server.serve()


def _log_one_line_per_event() -> None:
    """The bridge's own messages as plain lines on stderr (not wrapped into a table), so each
    event is one line of `docker logs` or a log file."""
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s memctl bridge %(levelname)s: %(message)s"))
        log.addHandler(handler)
        log.propagate = False


def run_bridge(settings: Settings, *, http: bool) -> None:
    """Run the bridge to completion on the fastest event loop available (uvloop)."""
    _log_one_line_per_event()
    try:
        import uvloop  # noqa: F401
    except ImportError:
        options: dict[str, bool] = {}
    else:
        options = {"use_uvloop": True}
    anyio.run(serve_http if http else serve_stdio, settings, backend_options=options)
