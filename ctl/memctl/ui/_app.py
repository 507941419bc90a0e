"""The web view's Starlette app: sessions and CSRF around each route, pages rendered from
`templates/ui/` with autoescaping (memory text is hostile input), errors as pages."""

from __future__ import annotations

import hmac
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_bridge import Conflict, InvalidInput, MemctlError, NotFound, Settings, caused_by
from memory_bridge.core import ItemStores

from ..operations._lookup import item_stores
from ..provision._templates import template_dir
from ._auth import Auth
from ._pages import PAGES, WRITES
from ._params import Values, fields, path_text, validated
from ._view import Handler, View, render

__all__ = ["create_app"]

_CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "content-security-policy": _CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",  # "no-referrer" would make a POST's Origin "null"
    "cache-control": "no-store",
    "x-frame-options": "DENY",
}
_STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
_MAX_FORM = 1 << 20
_STATUS = {NotFound: 404, InvalidInput: 400, Conflict: 409}


class _Headers:
    """Every response forbids loading anything from elsewhere and being framed or cached,
    and says how long the app took (Server-Timing, shown by a browser's developer tools)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    headers[name] = value
                headers["server-timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.2f}"
            await send(message)

        await self.app(scope, receive, sending)


async def _form(request: Request) -> dict[str, str]:
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        raise InvalidInput("form", "must be sent as application/x-www-form-urlencoded")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_FORM:
            raise InvalidInput("form", f"is larger than {_MAX_FORM} bytes")
    return fields(body, "form")


def _values(request: Request, route: str, form: dict[str, str]) -> Values:
    """The route's parameters from the URL and `form`, checked (`_params`)."""
    path_text(request.scope.get("raw_path") or request.url.path.encode(), route)
    query = fields(request.scope.get("query_string", b""), "query")
    return validated(route, query, request.path_params, form)


def _same_origin(request: Request) -> bool:
    """A POST from our own pages: its Origin (browsers send one on every POST) is this server."""
    origin = request.headers.get("origin")
    return origin is None or origin == f"{request.url.scheme}://{request.headers.get('host', '')}"


_FORGED = "the form's CSRF token is missing or wrong: reload the page"


def _genuine(request: Request, form: dict[str, str], csrf: str) -> bool:
    """A form from one of this session's pages: the session's CSRF token, our Origin."""
    sent = form.get("csrf", "")
    return _same_origin(request) and hmac.compare_digest(sent.encode(), csrf.encode())


def _bad_input(error: InvalidInput) -> HTMLResponse:
    return render("error.html.j2", 400, csrf="", done="", nav="", title="InvalidInput", message=str(error))


def _forbidden(reason: str) -> HTMLResponse:
    return render("error.html.j2", 403, csrf="", done="", nav="", title="Forbidden", message=reason)


class _App:
    """Sessions, CSRF and error pages around the page handlers."""

    def __init__(self, settings: Settings, auth: Auth, cookie: str) -> None:
        self.settings = settings
        self.auth = auth
        self.cookie = cookie
        self.stores: ItemStores | None = None

    def route(self, path: str, handler: Handler, *, write: bool) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            csrf = self.auth.csrf(request.cookies.get(self.cookie))
            if csrf is None:
                if write:
                    return _forbidden("not logged in: open the login link memctl ui printed")
                return RedirectResponse("/login", status_code=303)
            view = View(self.settings, request, csrf, stores=self.stores)
            try:
                form = await _form(request) if write else {}
                view.values = _values(request, path, form)
                if write and not _genuine(request, form, csrf):
                    return _forbidden(_FORGED)
                with caused_by(f"web view {path}"):
                    return await handler(view)
            except MemctlError as error:
                status = next((code for kind, code in _STATUS.items() if isinstance(error, kind)), 503)
                return view.page("error.html.j2", status, title=type(error).__name__, message=str(error))

        return endpoint

    def _logged_in(self, session: str) -> Response:
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(self.cookie, session, httponly=True, samesite="strict", path="/")
        return response

    async def login(self, request: Request) -> Response:
        """GET: the one-time link (`?code=`) or the form; POST: the project token."""
        if request.method == "GET":
            try:
                code = _values(request, "/login", {}).texts["code"]
            except InvalidInput as error:
                return render("login.html.j2", 400, csrf="", done="", nav="", error=str(error))
            if not code:
                return render("login.html.j2", csrf="", done="", nav="", error="")
            session = self.auth.redeem_code(code)
            if session is None:
                message = "this login link was used or has expired: log in with the project token"
                return render("login.html.j2", 403, csrf="", done="", nav="", error=message)
            return self._logged_in(session)
        if not _same_origin(request):
            return _forbidden("a login must come from this server's own page")
        try:
            token = _values(request, "/login", await _form(request)).texts["token"]
        except InvalidInput as error:
            return render("login.html.j2", 400, csrf="", done="", nav="", error=str(error))
        session = self.auth.redeem_token(token)
        if session is None:
            wrong = "that is not the project token (.memory/bridge.token or the token_file setting)"
            return render("login.html.j2", 403, csrf="", done="", nav="", error=wrong)
        return self._logged_in(session)

    async def logout(self, request: Request) -> Response:
        session = request.cookies.get(self.cookie)
        csrf = self.auth.csrf(session)
        if session is None or csrf is None:
            return RedirectResponse("/login", status_code=303)
        try:
            form = await _form(request)
            _values(request, "/logout", form)
        except InvalidInput as error:
            return _bad_input(error)
        if not _genuine(request, form, csrf):
            return _forbidden(_FORGED)
        self.auth.close(session)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(self.cookie, path="/")
        return response

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return Response("not found", 404, media_type="text/plain")
        return Response((template_dir() / "ui" / name).read_bytes(), media_type=_STATIC[name])

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        async with item_stores(self.settings, embed=True) as stores:
            self.stores = stores
            try:
                yield
            finally:
                self.stores = None


def create_app(settings: Settings, auth: Auth, *, cookie: str = "memctl_ui") -> Starlette:
    """The web view of the project `settings` names, for the sessions `auth` opens.

    `cookie` names the session cookie (one per port: browsers share cookies across ports)."""
    app = _App(settings, auth, cookie)
    routes = [
        Route("/login", app.login, methods=["GET", "POST"]),
        Route("/logout", app.logout, methods=["POST"]),
        Route("/static/{name}", app.static, methods=["GET"]),
        *(Route(path, app.route(path, page, write=False), methods=["GET"]) for path, page in PAGES.items()),
        *(Route(path, app.route(path, post, write=True), methods=["POST"]) for path, post in WRITES.items()),
    ]
    middleware = [
        Middleware(_Headers),
        Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost"]),
    ]
    return Starlette(routes=routes, middleware=middleware, lifespan=app.lifespan)
