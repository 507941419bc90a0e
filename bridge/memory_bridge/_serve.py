"""Running the bridge: on stdio for one client, or on streamable HTTP for many."""

from __future__ import annotations

import gc
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial

import anyio

from ._backends import Backend, BackendWatch
from ._blas import one_blas_thread
from ._errors import ConfigError, MemctlError, StoreError
from ._identity import pin_scope
from ._metrics import Metrics
from ._server import build_server
from ._settings import Settings
from ._tokens import token_source
from ._workspace_root import check_workspace
from .core._recall import RecallStamper
from .stores._url import make_embedder, open_entry_store, open_knowledge_store
from .tools._state import AppState

__all__ = ["open_state", "run_bridge", "serve_http", "serve_stdio", "settle_heap"]

log = logging.getLogger("memctl.bridge")
ENTRY_EMBED_INTERVAL_SECONDS = 2.0
STARTUP_GRACE_SECONDS = 1.0


@asynccontextmanager
async def open_state(settings: Settings, *, background: bool = True) -> AsyncIterator[AppState]:
    """Open the store for the settings' project, sweep expired entries while it is open
    (with `background`: one HTTP worker of several leaves that to the first).

    Serving a project pins its scope (`_identity.pin_scope`) once its stores exist."""
    if not settings.intake.redact_entries:
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
                debounce_seconds=settings.search.recall_stamp_debounce_hours * 3600,
                timeout_seconds=settings.serve.tool_timeout_seconds,
            )
            state = AppState(settings, store, Metrics(), knowledge, watch, recalls)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(state.backends.run)
                tasks.start_soon(recalls.run)  # every worker stamps what its own searches returned
                if background:
                    tasks.start_soon(_sweep_forever, state)
                    tasks.start_soon(_embed_entries_forever, state)
                yield state
                tasks.cancel_scope.cancel()
        finally:
            await knowledge.close()
    finally:
        await store.close()


async def _attempt(what: str, work: Callable[[], Awaitable[object]]) -> None:
    """One round of background work: a failure is logged, never the end of the bridge
    (the next round tries again)."""
    try:
        await work()
    except StoreError as exc:
        log.warning("%s failed: %s", what, exc)
    except Exception:
        log.exception("%s failed unexpectedly; the bridge keeps serving and tries again later", what)


async def _sweep_forever(state: AppState) -> None:
    """Drop expired entries; re-embed passages a model change left behind."""
    await anyio.sleep(STARTUP_GRACE_SECONDS)  # let the first client's requests go first
    while True:
        await _attempt("sweeping expired entries", state.store.sweep)
        await anyio.sleep(state.settings.retention.sweep_interval_seconds)
        await _attempt("knowledge upkeep", state.knowledge.upkeep)


async def _embed_entries_forever(state: AppState) -> None:
    """Give new and changed entries their vectors soon after they are written."""
    while True:
        await anyio.sleep(ENTRY_EMBED_INTERVAL_SECONDS)
        await _attempt("embedding entries", state.store.upkeep)


def settle_heap() -> None:
    """Keep what start-up built (modules, settings models, the server: ~100k objects) out
    of the garbage collector's full collections, which walk every object they track: ~45 ms
    each at that size, landing in whichever call allocated last (bench/README.md, "The
    tail at 1M"). No collection first: that would cost start-up as much."""
    gc.freeze()


async def serve_stdio(settings: Settings) -> None:
    """Speak MCP on stdin/stdout until the client closes the stream."""
    async with open_state(settings) as state:
        server = build_server(state)
        settle_heap()
        await server.run_stdio_async()


def check_bind(settings: Settings, tokens: Sequence[str]) -> None:
    """Refuse a non-loopback address without a bearer token."""
    from ._http import is_loopback

    if not tokens and not is_loopback(settings.serve.host):
        raise ConfigError(
            f"refusing to serve on {settings.serve.host} without a bearer token: anyone who can reach it "
            "could read and change this project's memory; pass --token-file (or bind 127.0.0.1)"
        )


async def serve_http(settings: Settings, *, worker: int | None = None) -> None:
    """Serve streamable HTTP at /mcp, with /health and /metrics, until interrupted.

    As `worker` i of several (`settings.serve.workers`), on its own socket sharing the port, and
    stateless: any worker answers any request."""
    import uvicorn  # the HTTP server and its app load only for --http (stdio starts faster)

    from ._http import build_http_app
    from ._workers import listening_socket

    tokens = token_source(settings)
    check_bind(settings, tokens.current())
    async with open_state(settings, background=not worker) as state:
        app = build_http_app(state, build_server(state, tools_now=True), tokens, worker=worker)
        config = uvicorn.Config(
            app,
            host=settings.serve.host,
            port=settings.serve.port,
            log_level=settings.serve.log_level.lower(),
            access_log=False,
            lifespan="on",
        )
        server = uvicorn.Server(config)
        settle_heap()
        sockets = None if worker is None else [listening_socket(settings.serve.host, settings.serve.port)]
        if not worker:
            workers = "" if worker is None else f", {settings.serve.workers} workers"
            print(
                f"memctl bridge: project {settings.project}, store {state.store.url}, "
                f"auth {'on' if tokens.current() else 'off'}{workers}, http://{settings.serve.host}:{settings.serve.port}/mcp",
                file=sys.stderr,
                flush=True,
            )
        await server.serve(sockets=sockets)


def serve_http_workers(settings: Settings, backend_options: dict[str, bool]) -> int:
    """`settings.serve.workers` processes serving HTTP on one port; their exit code (0 when stopped).

    The stores are opened once here first, so one that cannot open fails start-up with its
    own error (and the project's scope is pinned) before any worker starts."""
    from ._workers import reserve_port, run_workers

    check_bind(settings, token_source(settings).current())
    with reserve_port(settings.serve.host, settings.serve.port) as reserved:
        serve = settings.serve.model_copy(update={"port": reserved.getsockname()[1]})
        settings = settings.model_copy(update={"serve": serve})
        anyio.run(_open_once, settings, backend_options=backend_options)

        def work(index: int) -> None:
            try:
                anyio.run(partial(serve_http, worker=index), settings, backend_options=backend_options)
            except MemctlError as exc:
                print(f"memctl bridge: worker {index}: {exc}", file=sys.stderr, flush=True)
                sys.exit(1)
            except KeyboardInterrupt:
                pass

        return run_workers(settings.serve.workers, work)


async def _open_once(settings: Settings) -> None:
    async with open_state(settings, background=False):
        pass


def _log_one_line_per_event() -> None:
    """The bridge's own messages as plain lines on stderr (not wrapped into a table), so each
    event is one line of `docker logs` or a log file."""
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s memctl bridge %(levelname)s: %(message)s"))
        log.addHandler(handler)
        log.propagate = False


def run_bridge(settings: Settings, *, http: bool) -> None:
    """Run the bridge to completion on the fastest event loop available (uvloop); a
    workspace of `/` or the home directory is refused first."""
    one_blas_thread()  # before numpy loads, and for the HTTP workers it starts
    check_workspace(settings.project)
    _log_one_line_per_event()
    try:
        import uvloop  # noqa: F401
    except ImportError:
        options: dict[str, bool] = {}
    else:
        options = {"use_uvloop": True}
    if http and settings.serve.workers > 1:
        code = serve_http_workers(settings, options)
        if code:
            sys.exit(code)
        return
    anyio.run(serve_http if http else serve_stdio, settings, backend_options=options)
