"""`create_app()`: the emulator as a Starlette ASGI app.

In front of every route sits what nginx and Flask add: `X-Version` / `X-Env` headers on every reply
(spec §1.1), nginx's HTML error page while `state.outage` is set, and Dify's JSON envelope for
handled errors, unknown routes (404) and wrong methods (405).
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .console import console_routes
from .errors import ROUTE_NOT_FOUND, DifyError
from .ranking import Embedder
from .service_api import service_routes
from .state import DifyState

__all__ = ["create_app"]

_NGINX_REASONS = {502: "Bad Gateway", 503: "Service Temporarily Unavailable", 504: "Gateway Time-out"}


def _nginx_page(status: int) -> HTMLResponse:
    title = f"{status} {_NGINX_REASONS.get(status, 'Error')}"
    body = f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>\r\n"
    return HTMLResponse(
        body + "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", status, {"Server": "nginx"}
    )


class DifyFront:
    """Pure ASGI middleware: outage pages and the version headers."""

    def __init__(self, app: ASGIApp, state: DifyState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.state.outage is not None:
            await _nginx_page(self.state.outage)(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.append("X-Version", self.state.version)
                headers.append("X-Env", self.state.deploy_env)
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _dify_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DifyError)
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        error = DifyError(405, "method_not_allowed", "The method is not allowed for the requested URL.")
    else:
        error = DifyError(404, "not_found", ROUTE_NOT_FOUND)
    return JSONResponse(error.body(), status_code=error.status, headers=exc.headers)


def create_app(
    *, version: str = "1.16.0", indexing_delay: float = 0.0, embedder: Embedder | None = None
) -> Starlette:
    """A fresh emulated Dify `version` whose indexing jobs take `indexing_delay` seconds; `embedder`
    (optional, `embed_documents` / `embed_query` returning unit vectors) scores semantic search."""
    state = DifyState(version=version, indexing_delay=indexing_delay, embedder=embedder)
    app = Starlette(
        routes=[*service_routes(state.quirks), *console_routes()],
        middleware=[Middleware(DifyFront, state=state)],
        exception_handlers={DifyError: _dify_error, HTTPException: _http_error},
    )
    app.state.dify = state
    return app
