"""Dify's error envelope (spec §1.3): `{"code", "message", "status"}` with the HTTP status."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ROUTE_NOT_FOUND",
    "DifyError",
    "bad_json",
    "forbidden",
    "invalid_action",
    "invalid_param",
    "not_found",
    "unauthorized",
    "validation_error",
]

ROUTE_NOT_FOUND = (
    "The requested URL was not found on the server. If you entered the URL manually please check your "
    "spelling and try again."
)


class DifyError(Exception):
    """A handled error: rendered as the envelope with `status` as the HTTP status."""

    def __init__(
        self, status: int, code: str, message: str, *, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "status": self.status}


def invalid_param(message: str) -> DifyError:
    """What any ValueError / pydantic ValidationError becomes: 400 `invalid_param`."""
    return DifyError(400, "invalid_param", message)


def validation_error(model: str, field: str, reason: str) -> DifyError:
    """A pydantic-style validation message (the text Dify echoes for request-model failures)."""
    return invalid_param(f"1 validation error for {model}\n{field}\n  {reason}")


def not_found(message: str) -> DifyError:
    return DifyError(404, "not_found", message)


def forbidden(message: str) -> DifyError:
    return DifyError(403, "forbidden", message)


def unauthorized(message: str, *, realm: bool = False) -> DifyError:
    headers = {"WWW-Authenticate": 'Bearer realm="api"'} if realm else None
    return DifyError(401, "unauthorized", message, headers=headers)


def invalid_action(message: str) -> DifyError:
    return DifyError(400, "invalid_action", message)


def bad_json(detail: str) -> DifyError:
    """Werkzeug's answer to a body that is not JSON."""
    return DifyError(400, "bad_request", f"Failed to decode JSON object: {detail}")
