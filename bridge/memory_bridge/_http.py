"""The HTTP face of the bridge: POST /mcp (both protocol eras), /health, /metrics, auth."""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from http import HTTPStatus
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._errors import StoreError
from ._metrics import CONTENT_TYPE
from ._tokens import TokenSource
from .tools._state import AppState

__all__ = ["BearerAuth", "RejectionLog", "build_http_app", "is_loopback"]

log = logging.getLogger("memctl.bridge")

_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
_LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
HEALTH_TIMEOUT_SECONDS = 2.0


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class WorkerHeader:
    """Name the worker that answered in a `Memctl-Worker` header (with several workers), so
    a client or a test can see its requests spread over them."""

    def __init__(self, app: ASGIApp, worker: int) -> None:
        self.app = app
        self.header = (b"memctl-worker", str(worker).encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def named(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), self.header]}
            await send(message)

        await self.app(scope, receive, named if scope["type"] == "http" else send)


class BearerAuth:
    """Require `Authorization: Bearer <token>` on the MCP endpoint only.

    Every accepted token is compared in constant time. /health and /metrics stay open,
    as in memory-mcp. The accepted tokens are asked of `tokens` on each request, so a
    rotated token file takes effect at once and a replaced token works until its grace ends.
    """

    def __init__(self, app: ASGIApp, tokens: TokenSource, path: str = "/mcp") -> None:
        self.app = app
        self.path = path
        self._tokens = tokens

    def _authorised(self, scope: Scope, expected: list[bytes]) -> bool:
        presented = b""
        for key, value in scope.get("headers", ()):
            if key == b"authorization":
                presented = bytes(value)
                break
        # the scheme is case-insensitive (RFC 9110, 11.1), the token is not
        scheme, _, credentials = presented.partition(b" ")
        presented = credentials if scheme.lower() == b"bearer" else b""
        matches = [hmac.compare_digest(presented, token) for token in expected]
        return any(matches) and bool(presented)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.path:
            expected = [token.encode() for token in self._tokens.current()]
            refused = bool(expected) and not self._authorised(scope, expected)
        else:
            refused = False
        if refused:
            response = JSONResponse(
                {"error": "Unauthorized"}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _reason(status: int, body: bytes, scope: Scope) -> str:
    """Why a request was refused, from the response (never from the Authorization header's value)."""
    if status == 401:
        return "no bearer token" if _header(scope, b"authorization") is None else "bearer token not accepted"
    try:
        data = json.loads(body)
        error = data.get("error") if isinstance(data, dict) else None
        text = str(error.get("message") if isinstance(error, dict) else error or "")
    except ValueError:
        text = body.decode("utf-8", "replace")
    text = " ".join(text.split())[:200] or HTTPStatus(status).phrase
    judged = {421: b"host", 403: b"origin"}.get(status)
    return f"{text} ({_header(scope, judged)})" if judged and _header(scope, judged) else text


class RejectionLog:
    """Log each refused request (a 4xx answer) in one line: status, reason, method, path and
    the client's address. No header value is logged except a refused Host or Origin."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        # This line replaces the transport security's own warning about a Host or Origin.
        logging.getLogger("mcp.server.transport_security").setLevel(logging.ERROR)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status, body = 0, b""

        async def watched(message: Message) -> None:
            nonlocal status, body
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body" and 400 <= status < 500 and len(body) < 4096:
                body += message.get("body", b"")
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            if 400 <= status < 500:
                host, port = scope.get("client") or ("unknown", 0)
                log.warning(
                    "rejected %s %s from %s:%s: %d %s",
                    scope["method"],
                    scope["path"],
                    host,
                    port,
                    status,
                    _reason(status, body, scope),
                )


def _transport_security(state: AppState) -> TransportSecuritySettings:
    settings = state.settings
    hosts = [*_LOOPBACK_HOSTS, *settings.serve.allowed_hosts]
    if not is_loopback(settings.serve.host) and settings.serve.host not in ("0.0.0.0", "::"):
        hosts += [settings.serve.host, f"{settings.serve.host}:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[*_LOOPBACK_ORIGINS, *settings.serve.allowed_origins],
    )


def build_http_app(
    state: AppState, mcp: MCPServer[Any], tokens: TokenSource, *, worker: int | None = None
) -> ASGIApp:
    """The ASGI app: streamable HTTP at /mcp plus /health and /metrics. As one `worker` of
    several, MCP is stateless (no session to find on another worker) and each answer names it."""

    async def health(request: Request) -> Response:
        try:
            with anyio.fail_after(HEALTH_TIMEOUT_SECONDS):
                await state.store.ping()
        except StoreError as exc:
            state.backends.suspect()
            return JSONResponse({"ok": False, "error": str(exc)}, status_code=503)
        except TimeoutError:
            state.backends.suspect()
            message = f"store did not answer within {HEALTH_TIMEOUT_SECONDS:g} s"
            return JSONResponse({"ok": False, "error": message}, status_code=503)
        return Response(json.dumps({"ok": True}), media_type="application/json")

    async def metrics(request: Request) -> Response:
        body = await state.metrics.render(state.store)
        return Response(body, headers={"Content-Type": CONTENT_TYPE})

    mcp.custom_route("/health", methods=["GET"], include_in_schema=False)(health)
    mcp.custom_route("/metrics", methods=["GET"], include_in_schema=False)(metrics)
    app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        json_response=True,
        stateless_http=worker is not None,
        max_request_body_size=state.settings.serve.max_body_bytes,
        transport_security=_transport_security(state),
        host=state.settings.serve.host,
    )
    served = RejectionLog(BearerAuth(app, tokens))
    return served if worker is None else WorkerHeader(served, worker)
