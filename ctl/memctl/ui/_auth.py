"""Who may use the web view: a one-time login link or the project token opens a session.

The session lives in an HttpOnly, SameSite=Strict cookie; every form carries the session's
CSRF token, checked (with the request's Origin) on every POST.
"""

from __future__ import annotations

import hmac
import secrets
import time

__all__ = ["Auth"]

_CODE_SECONDS = 600.0


class Auth:
    """The sessions of one `memctl ui` run, in memory: a restart logs everyone out."""

    def __init__(self, token: str, *, now: float | None = None) -> None:
        self._token = token
        self._code: str | None = secrets.token_urlsafe(32)
        self._code_expires = (time.monotonic() if now is None else now) + _CODE_SECONDS
        self._sessions: dict[str, str] = {}  # session id -> its CSRF token

    @property
    def login_code(self) -> str:
        """The one-time code of the printed login link (valid once, for ten minutes)."""
        if self._code is None:
            raise RuntimeError("the login code was used")
        return self._code

    def _open(self) -> str:
        session = secrets.token_urlsafe(32)
        self._sessions[session] = secrets.token_urlsafe(32)
        return session

    def redeem_code(self, code: str) -> str | None:
        """A new session if `code` is the unused, unexpired login code; it is then used up."""
        if self._code is None or time.monotonic() > self._code_expires:
            return None
        if not hmac.compare_digest(code.encode(), self._code.encode()):
            return None
        self._code = None
        return self._open()

    def redeem_token(self, token: str) -> str | None:
        """A new session if `token` is the project token."""
        if not hmac.compare_digest(token.strip().encode(), self._token.encode()):
            return None
        return self._open()

    def csrf(self, session: str | None) -> str | None:
        """The CSRF token of a live session, or None when `session` is not one."""
        return None if session is None else self._sessions.get(session)

    def close(self, session: str) -> None:
        self._sessions.pop(session, None)
