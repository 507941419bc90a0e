"""Several processes serving the HTTP bridge on one port (the `workers` setting above 1).

The parent checks the address is free, then forks the workers. Each binds its own socket to
the port with SO_REUSEPORT, so the kernel spreads new connections over them, and serves with
its own event loop and store connections; MCP over HTTP is stateless then, so no request
depends on which worker answered an earlier one, and compare-and-set holds because the store
checks a revision inside its own transaction (SQLite) or script (Valkey). The parent forwards
SIGTERM and, when a worker exits, stops the others: the supervisor (Docker's restart policy,
systemd, the shell) restarts the whole bridge.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
from collections.abc import Callable
from multiprocessing.connection import wait
from types import FrameType

from ._sockets import bound_socket

__all__ = ["listening_socket", "reserve_port", "run_workers"]


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound (not listening, so it takes no connections) to the port the workers
    share: it fails start-up when the port is taken and resolves port 0 once for all."""
    return bound_socket(host, port, share_port=True)


def listening_socket(host: str, port: int) -> socket.socket:
    """One worker's own listening socket on the shared port."""
    sock = bound_socket(host, port, share_port=True)
    sock.listen(2048)
    return sock


def run_workers(count: int, work: Callable[[int], None]) -> int:
    """Run `work(index)` in `count` forked processes until one exits or SIGTERM/SIGINT;
    0 when stopped by a signal, else the first nonzero exit status of a worker (1 if none)."""

    def child(index: int) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        work(index)

    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=child, args=(i,), name=f"memctl-bridge-{i}") for i in range(count)]
    signalled = False

    def stop_all() -> None:
        for process in processes:
            if process.pid is not None and process.exitcode is None:
                os.kill(process.pid, signal.SIGTERM)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal signalled
        signalled = True
        stop_all()

    previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        for process in processes:
            process.start()
        wait([process.sentinel for process in processes])
        stop_all()
        for process in processes:
            process.join()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if signalled:
        return 0
    code = next((code for p in processes if (code := p.exitcode)), 1)
    return code if code > 0 else 128 - code  # killed by signal N: 128 + N, as a shell reports it
