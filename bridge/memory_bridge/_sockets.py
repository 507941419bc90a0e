"""Listening sockets bound before a server starts, so a taken port fails start-up clearly."""

from __future__ import annotations

import socket

from ._errors import ConfigError

__all__ = ["bound_socket"]


def bound_socket(host: str, port: int, *, share_port: bool = False, hint: str = "") -> socket.socket:
    """A TCP socket bound to `host:port` (IPv6 when `host` has a colon; port 0: any free one),
    not yet listening. `share_port` lets several processes bind the same port (SO_REUSEPORT).
    A port that cannot be bound is a ConfigError naming it, the reason and `hint`."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if share_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}") from None
    return sock
