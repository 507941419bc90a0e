"""Bearer tokens that rotate while the bridge runs.

The token file holds the current token. Beside it, `<token file>.previous` (mode 0600)
holds tokens replaced by a rotation, each with the time its grace period ends, as JSON:
`{"tokens": [{"token": "...", "expires_at": 1767225600.0}]}`. The bridge stats both
files on each request and re-reads them only when one changed, so a rotation takes
effect without a restart, and a replaced token is accepted until its grace ends.
"""

from __future__ import annotations

import json
import logging
import secrets
import stat
import string
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ._errors import ConfigError
from ._files import write_atomically
from ._settings import Settings, read_token_file

__all__ = [
    "FileTokens",
    "Rotation",
    "StaticTokens",
    "TokenSource",
    "new_token",
    "previous_path",
    "rotate_token",
    "token_source",
]

log = logging.getLogger("memctl.bridge")
Clock = Callable[[], float]
_ALPHABET = string.ascii_letters + string.digits
_LENGTH = 43  # 43 of 62 symbols: about 256 bits


def new_token() -> str:
    """A new bearer token: 43 random letters and digits, safe in a header, a URL or a shell."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(_LENGTH))


class TokenSource(Protocol):
    def current(self) -> Sequence[str]:
        """Every token accepted right now (empty: authentication is off)."""
        ...


@dataclass(frozen=True)
class StaticTokens:
    tokens: tuple[str, ...] = field(repr=False)

    def current(self) -> Sequence[str]:
        return self.tokens


def previous_path(token_file: Path) -> Path:
    return token_file.with_name(token_file.name + ".previous")


def _read_previous(path: Path) -> list[tuple[str, float]]:
    """Replaced tokens and the end of their grace; [] when there is no such file."""
    try:
        mode = path.stat().st_mode
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise ConfigError(f"token grace file {path}: cannot read it ({exc.__class__.__name__})") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"token grace file {path}: readable by others; run chmod 600 on it")
    try:
        return [(str(t["token"]), float(t["expires_at"])) for t in data["tokens"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"token grace file {path}: not in the expected format") from exc


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


class FileTokens:
    """The token file and its grace file, re-read when either changes on disk."""

    def __init__(self, token_file: Path, clock: Clock = time.time) -> None:
        self.token_file = token_file
        self.previous_file = previous_path(token_file)
        self._clock = clock
        self._seen: tuple[object, object] | None = None
        self._token = ""
        self._previous: list[tuple[str, float]] = []
        self._reload(strict=True)

    def _reload(self, *, strict: bool) -> None:
        seen = (_signature(self.token_file), _signature(self.previous_file))
        if seen == self._seen:
            return
        try:
            token = read_token_file(self.token_file).get_secret_value()
            previous = _read_previous(self.previous_file)
        except ConfigError as exc:
            if strict:
                raise
            log.warning("keeping the tokens already loaded: %s", exc)  # the message never holds a token
            return
        self._seen, self._token, self._previous = seen, token, previous

    def current(self) -> Sequence[str]:
        self._reload(strict=False)
        now = self._clock()
        return [self._token, *(token for token, until in self._previous if until > now)]


def token_source(settings: Settings) -> TokenSource:
    """The tokens the settings name: a rotatable file, a fixed token, or none."""
    if settings.serve.token_file is not None:
        return FileTokens(settings.serve.token_file)
    token = settings.bearer_token()
    if token is None:
        return StaticTokens(())
    if not token.get_secret_value().strip():  # load_settings refuses it first; a model_copy does not
        raise ConfigError("auth_token is empty or only whitespace, which would let any request in")
    return StaticTokens((token.get_secret_value(),))


def _write_private(path: Path, text: str) -> None:
    """Replace `path` with `text` in one rename; the file is 0600 from its first byte."""
    write_atomically(path, text, mode=0o600)


@dataclass(frozen=True)
class Rotation:
    token_file: Path
    previous_file: Path
    token: str = field(repr=False)
    replaced: bool  # False: there was no token before
    grace_until: float | None  # when the replaced token stops working
    still_valid: int  # replaced tokens accepted right now, this rotation's included


def rotate_token(token_file: Path, grace_seconds: float, clock: Clock = time.time) -> Rotation:
    """Issue a new token; the one it replaces keeps working for `grace_seconds`.

    The grace file is written before the token file, so at no moment is the old token
    refused while its grace lasts. Tokens whose grace has ended are dropped from it."""
    now = clock()
    old = read_token_file(token_file).get_secret_value() if token_file.exists() else None
    previous_file = previous_path(token_file)
    kept = [(t, until) for t, until in _read_previous(previous_file) if until > now]
    grace_until = None
    if old is not None and grace_seconds > 0:
        grace_until = now + grace_seconds
        kept.append((old, grace_until))
    _write_private(
        previous_file, json.dumps({"tokens": [{"token": t, "expires_at": until} for t, until in kept]}) + "\n"
    )
    token = new_token()
    _write_private(token_file, token + "\n")
    return Rotation(token_file, previous_file, token, old is not None, grace_until, len(kept))
