"""Parsing a Valkey store URL into connection options."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from ..._errors import ConfigError

__all__ = ["ValkeyTarget", "parse_valkey_url"]

_SCHEMES = {"valkey": False, "redis": False, "valkeys": True, "rediss": True}


@dataclass(frozen=True, slots=True)
class ValkeyTarget:
    host: str
    port: int
    db: int
    username: str | None
    password: str | None
    tls: bool
    prefix: str
    ca_file: str | None = None

    @property
    def safe_url(self) -> str:
        """The URL with any password replaced, fit for logs and errors."""
        scheme = "valkeys" if self.tls else "valkey"
        auth = f"{self.username or ''}:***@" if self.password else ""
        query = f"?prefix={self.prefix}" if self.prefix else ""
        return f"{scheme}://{auth}{self.host}:{self.port}/{self.db}{query}"


def parse_valkey_url(url: str) -> ValkeyTarget:
    """`valkey://[user:pass@]host:port/db[?prefix=p]`; `valkeys://` (or rediss://) for TLS.

    `?ca=/path/ca.pem` names the CA that signed the server's certificate (default: the
    system's trust store).
    """
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES:
        raise ConfigError(f"entry store: {parts.scheme!r} is not a Valkey URL scheme (valkey://, valkeys://)")
    try:
        port = parts.port or 6379
    except ValueError as exc:
        raise ConfigError("entry store: the Valkey URL has an invalid port") from exc
    if not parts.hostname:
        raise ConfigError("entry store: the Valkey URL names no host")
    path = parts.path.strip("/")
    if path and not path.isdigit():
        raise ConfigError(f"entry store: database {path!r} in the Valkey URL is not a number")
    options = parse_qs(parts.query)
    unknown = set(options) - {"prefix", "ca"}
    if unknown:
        raise ConfigError(f"entry store: unknown Valkey URL option(s): {', '.join(sorted(unknown))}")
    return ValkeyTarget(
        host=parts.hostname,
        port=port,
        db=int(path or 0),
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        tls=_SCHEMES[parts.scheme],
        prefix=options.get("prefix", [""])[0],
        ca_file=options.get("ca", [None])[0],
    )
