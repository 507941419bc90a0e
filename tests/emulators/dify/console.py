"""The console endpoints a headless install needs (spec §10.3): setup, init, login, dataset API keys.

Login answers per version: tokens in the body before 1.9; from 1.9 cookies `access_token`,
`refresh_token` and `csrf_token` (plain names: the emulator is served over http), after which every
authenticated call needs the `X-CSRF-Token` header equal to the `csrf_token` cookie; from 1.10 the
login password is Base64 of the UTF-8 password.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .errors import DifyError, invalid_param, not_found, unauthorized
from .models import ApiKey, ConsoleSession
from .payloads import json_body
from .state import DifyState
from .views import ts

__all__ = ["console_routes"]

_MAX_KEYS = 10
_LOGIN_ATTEMPTS = 5
_PASSWORD = re.compile(r"^(?=.*[a-zA-Z])(?=.*\d).{8,}$")
_EMAIL = re.compile(r"^[\w.!#$%&'*+/=?^`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")
_SESSION_COOKIE = "session"


def _state(request: Request) -> DifyState:
    state: DifyState = request.app.state.dify
    return state


def _setup_required(state: DifyState) -> None:
    if state.setup_at is None:
        if state.init_password:
            raise DifyError(
                401,
                "not_init_validated",
                "Init validation has not been completed yet. "
                "Please proceed with the init validation process first.",
            )
        raise DifyError(
            401,
            "not_setup",
            "Dify has not been initialized and installed yet. "
            "Please proceed with the initialization and installation process first.",
        )


def _login_required(request: Request, state: DifyState) -> ConsoleSession:
    token = request.cookies.get("access_token") if state.quirks.login_cookies else None
    header = request.headers.get("authorization", "")
    if not token and header.lower().startswith("bearer "):
        token = header[7:].strip()
    session = next((s for s in state.console_sessions if token and s.access_token == token), None)
    if session is None:
        raise unauthorized("Invalid Authorization token.")
    if state.quirks.login_cookies and request.method != "OPTIONS":
        csrf = request.headers.get("x-csrf-token")
        if not csrf or csrf != request.cookies.get("csrf_token") or csrf != session.csrf_token:
            raise unauthorized("CSRF token is missing or invalid.")
    return session


def console_endpoint(
    handler: Callable[[Request, DifyState], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """`setup_required` + `login_required`, as on every console resource used here."""

    async def run(request: Request) -> Response:
        state = _state(request)
        _setup_required(state)
        _login_required(request, state)
        return await handler(request, state)

    return run


# -- setup and init ------------------------------------------------------------------------------


async def get_setup(request: Request) -> Response:
    state = _state(request)
    if state.setup_at is None:
        return JSONResponse({"step": "not_started"})
    stamp = datetime.fromtimestamp(state.setup_at, UTC).replace(tzinfo=None).isoformat()
    return JSONResponse({"step": "finished", "setup_at": stamp})


def _already_setup() -> DifyError:
    return DifyError(
        403,
        "already_setup",
        "Dify has been successfully installed. Please refresh the page or return to the dashboard homepage.",
    )


async def post_setup(request: Request) -> Response:
    state = _state(request)
    if state.setup_at is not None:
        raise _already_setup()
    if state.init_password and request.cookies.get(_SESSION_COOKIE) not in state.init_sessions:
        _setup_required(state)
    body = await json_body(request)
    email, name, password = body.get("email"), body.get("name"), body.get("password")
    if not isinstance(email, str) or not _EMAIL.match(email):
        raise invalid_param(f"{email} is not a valid email.")
    if not isinstance(name, str) or not 1 <= len(name) <= 30:
        raise invalid_param("Name must be between 1 and 30 characters.")
    if not isinstance(password, str) or not _PASSWORD.match(password):
        raise invalid_param(
            "Password must contain letters and numbers, and the length must be greater than 8."
        )
    state.owner.email, state.owner.name, state.owner.password = email, name, password
    state.setup_at = state.now()
    return JSONResponse({"result": "success"}, status_code=201)


async def get_init(request: Request) -> Response:
    state = _state(request)
    finished = (
        not state.init_password
        or state.setup_at is not None
        or request.cookies.get(_SESSION_COOKIE) in state.init_sessions
    )
    return JSONResponse({"status": "finished" if finished else "not_started"})


async def post_init(request: Request) -> Response:
    state = _state(request)
    if state.setup_at is not None:
        raise _already_setup()
    body = await json_body(request)
    if state.init_password and body.get("password") != state.init_password:
        raise DifyError(
            401, "init_validate_failed", "Init validation failed. Please check the password and try again."
        )
    session = secrets.token_urlsafe(24)
    state.init_sessions.add(session)
    response = JSONResponse({"result": "success"}, status_code=201)
    response.set_cookie(_SESSION_COOKIE, session, httponly=True, samesite="lax")
    return response


# -- login -----------------------------------------------------------------------------------------


def _issue(state: DifyState, body: dict[str, Any]) -> Response:
    session = ConsoleSession(secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(32))
    state.console_sessions.append(session)
    if not state.quirks.login_cookies:
        return JSONResponse(
            {**body, "data": {"access_token": session.access_token, "refresh_token": session.refresh_token}}
        )
    response = JSONResponse(body)
    response.set_cookie("access_token", session.access_token, httponly=True, samesite="lax", max_age=3600)
    response.set_cookie(
        "refresh_token", session.refresh_token, httponly=True, samesite="lax", max_age=30 * 86400
    )
    response.set_cookie("csrf_token", session.csrf_token, httponly=False, samesite="lax", max_age=3600)
    return response


def _decode_password(value: Any) -> Any:
    try:
        return base64.b64decode(str(value)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise DifyError(401, "authentication_failed", "Invalid encrypted data") from None


async def login(request: Request) -> Response:
    state = _state(request)
    _setup_required(state)
    body = await json_body(request)
    email, password = body.get("email"), body.get("password")
    if state.quirks.login_base64_password and password is not None:
        password = _decode_password(password)
    key = str(email)
    if state.login_failures.get(key, 0) >= _LOGIN_ATTEMPTS:
        raise DifyError(
            429, "email_code_login_limit", "Too many incorrect password attempts. Please try again later."
        )
    if email != state.owner.email or password != state.owner.password:
        state.login_failures[key] = state.login_failures.get(key, 0) + 1
        raise DifyError(401, "authentication_failed", "Invalid email or password.")
    state.login_failures.pop(key, None)
    return _issue(state, {"result": "success"})


async def refresh_token(request: Request) -> Response:
    state = _state(request)
    if state.quirks.login_cookies:
        token = request.cookies.get("refresh_token")
    else:
        token = (await json_body(request)).get("refresh_token")
    if not token:
        return JSONResponse({"result": "fail", "message": "No refresh token provided"}, status_code=401)
    session = next((s for s in state.console_sessions if s.refresh_token == token), None)
    if session is None:
        return JSONResponse({"result": "fail", "message": "Invalid refresh token"}, status_code=401)
    state.console_sessions.remove(session)
    return _issue(state, {"result": "success"})


# -- dataset API keys ------------------------------------------------------------------------------


def _key_view(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "type": key.type,
        "token": key.token,
        "last_used_at": ts(key.last_used_at),
        "created_at": ts(key.created_at),
    }


async def create_api_key(request: Request, state: DifyState) -> Response:
    if sum(1 for k in state.api_keys.values() if k.type == "dataset") >= _MAX_KEYS:
        raise DifyError(
            400, "max_keys_exceeded", f"Cannot create more than {_MAX_KEYS} API keys for this resource type."
        )
    token = state.add_api_key()
    key = state.key_for(token)
    assert key is not None
    return JSONResponse(_key_view(key))


async def list_api_keys(request: Request, state: DifyState) -> Response:
    keys = sorted((k for k in state.api_keys.values() if k.type == "dataset"), key=lambda k: k.created_at)
    return JSONResponse({"data": [_key_view(k) for k in keys]})


async def delete_api_key(request: Request, state: DifyState) -> Response:
    key = state.api_keys.get(str(request.path_params["api_key_id"]))
    if key is None or key.type != "dataset":
        raise not_found("API key not found")
    del state.api_keys[key.id]
    return Response(status_code=204)


async def toggle_dataset_api(request: Request, state: DifyState) -> Response:
    dataset = state.datasets.get(str(request.path_params["dataset_id"]))
    if dataset is None:
        raise not_found("Dataset not found.")
    dataset.enable_api = request.url.path.endswith("/enable")
    return JSONResponse({"result": "success"})


async def default_model(request: Request, state: DifyState) -> Response:
    """The workspace's default model of a type: `{"data": null}` without one (a fresh Dify)."""
    if request.query_params.get("model_type") != "text-embedding" or not state.embedding_models:
        return JSONResponse({"data": None})
    model, provider = state.embedding_models[0]
    return JSONResponse(
        {"data": {"model": model, "model_type": "text-embedding", "provider": {"provider": provider}}}
    )


async def api_base_info(request: Request, state: DifyState) -> Response:
    return JSONResponse({"api_base_url": f"{request.url.scheme}://{request.url.netloc}/v1"})


def console_routes() -> list[BaseRoute]:
    base = "/console/api"
    dataset_api = base + "/datasets/{dataset_id:uuid}/api-keys"
    return [
        Route(base + "/setup", get_setup, methods=["GET"]),
        Route(base + "/setup", post_setup, methods=["POST"]),
        Route(base + "/init", get_init, methods=["GET"]),
        Route(base + "/init", post_init, methods=["POST"]),
        Route(base + "/login", login, methods=["POST"]),
        Route(base + "/refresh-token", refresh_token, methods=["POST"]),
        Route(base + "/datasets/api-keys", console_endpoint(list_api_keys), methods=["GET"]),
        Route(base + "/datasets/api-keys", console_endpoint(create_api_key), methods=["POST"]),
        Route(
            base + "/datasets/api-keys/{api_key_id:uuid}",
            console_endpoint(delete_api_key),
            methods=["DELETE"],
        ),
        Route(base + "/datasets/api-base-info", console_endpoint(api_base_info), methods=["GET"]),
        Route(base + "/workspaces/current/default-model", console_endpoint(default_model), methods=["GET"]),
        Route(dataset_api + "/enable", console_endpoint(toggle_dataset_api), methods=["POST"]),
        Route(dataset_api + "/disable", console_endpoint(toggle_dataset_api), methods=["POST"]),
    ]
