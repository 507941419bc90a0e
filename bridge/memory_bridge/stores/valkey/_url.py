"""Parsing a Valkey store URL into connection options."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from ..._errors import ConfigError

__all__ = ["ValkeyTarget", "parse_valkey_url"]

# scheme -> (tls, cluster)
_SCHEMES = {
    "valkey": (False, False),
    "redis": (False, False),
    "valkeys": (True, False),
    "rediss": (True, False),
    "valkey+cluster": (False, True),
    "valkeys+cluster": (True, True),
}


@dataclass(frozen=True, slots=True)
class ValkeyTarget:
    nodes: tuple[tuple[str, int], ...]
    db: int
    username: str | None
    password: str | None
    tls: bool
    cluster: bool
    prefix: str
    ca_file: str | None = None

    @property
    def host(self) -> str:
        return self.nodes[0][0]

    @property
    def port(self) -> int:
        return self.nodes[0][1]

    @property
    def safe_url(self) -> str:
        """The URL with any password replaced, fit for logs and errors."""
        scheme = ("valkeys" if self.tls else "valkey") + ("+cluster" if self.cluster else "")
        auth = f"{self.username or ''}:***@" if self.password else ""
        hosts = ",".join(f"{host}:{port}" for host, port in self.nodes)
        path = "" if self.cluster else f"/{self.db}"
        query = f"?prefix={self.prefix}" if self.prefix else ""
        return f"{scheme}://{auth}{hosts}{path}{query}"


def _node(item: str) -> tuple[str, int]:
    """`host`, `host:port`, `[v6]` or `[v6]:port`."""
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = item.partition(":")
    if not host:
        raise ConfigError("entry store: the Valkey URL names no host")
    if port and not port.isdigit():
        raise ConfigError(f"entry store: port {port!r} in the Valkey URL is not a number")
    return host, int(port or 6379)


def _nodes(netloc: str) -> tuple[tuple[str, int], ...]:
    return tuple(_node(item) for item in netloc.rpartition("@")[2].split(","))


def parse_valkey_url(url: str) -> ValkeyTarget:
    """`valkey://[user:pass@]host:port/db[?prefix=p]`; `valkeys://` for TLS;
    `valkey+cluster://host:port,host:port` for Valkey Cluster.

    `?ca=/path/ca.pem` names the CA that signed the server's certificate (default: the
    system's trust store).
    """
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES:
        raise ConfigError(
            f"entry store: {parts.scheme!r} is not a Valkey URL scheme (valkey://, valkeys://, valkey+cluster://)"
        )
    tls, cluster = _SCHEMES[parts.scheme]
    nodes = _nodes(parts.netloc)
    if len(nodes) > 1 and not cluster:
        raise ConfigError("entry store: several hosts need a valkey+cluster:// URL")
    path = parts.path.strip("/")
    if path and not path.isdigit():
        raise ConfigError(f"entry store: database {path!r} in the Valkey URL is not a number")
    if path and int(path) != 0 and cluster:
        raise ConfigError("entry store: Valkey Cluster has only database 0")
    options = parse_qs(parts.query)
    unknown = set(options) - {"prefix", "ca"}
    if unknown:
        raise ConfigError(f"entry store: unknown Valkey URL option(s): {', '.join(sorted(unknown))}")
    prefix = options.get("prefix", [""])[0]
    if cluster and ("{" in prefix or "}" in prefix):
        raise ConfigError("entry store: a cluster key prefix must not contain { or }")
    return ValkeyTarget(
        nodes=nodes,
        db=int(path or 0),
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        tls=tls,
        cluster=cluster,
        prefix=prefix,
        ca_file=options.get("ca", [None])[0],
    )
