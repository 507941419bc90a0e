"""The one place valkey-py exceptions become memctl errors.

Every exception class valkey-py defines maps to the tree, and so do the internal errors its
cluster client lets out while a node goes away (a `RuntimeError` from a closed transport,
an `AttributeError` on a connection already dropped): they are outages, not bugs of ours,
and an unmapped one used to end the bridge from a background sweep. Refused credentials or
permissions (NOAUTH, WRONGPASS, NOPERM) are `AccessDenied`: a wrong password is not an outage.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ..._errors import AccessDenied, StoreError, StoreUnavailable

__all__ = ["client_retry", "map_valkey_errors"]

_ACCESS_CODES = ("NOAUTH", "WRONGPASS", "NOPERM")
T = TypeVar("T")


class _Refused(Exception):
    """Carries an AuthenticationError past valkey-py's retry loop."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def client_retry() -> Any:
    """valkey-py's retry policy for our clients: one quick retry of a dropped connection or a
    timeout, never of refused credentials. (AuthenticationError is a ConnectionError, so
    valkey-py retries it, and with the connection's health check a server that wants a
    password loops until our call's deadline: an outage instead of NOAUTH.)"""
    from valkey.asyncio.retry import Retry
    from valkey.backoff import ExponentialBackoff
    from valkey.exceptions import AuthenticationError

    class NoRetryOnRefusal(Retry):
        async def call_with_retry(self, do: Callable[[], Awaitable[T]], fail: Callable[[Any], Any]) -> T:
            async def attempt() -> T:
                try:
                    return await do()
                except AuthenticationError as exc:
                    raise _Refused(exc) from exc

            try:
                return await super().call_with_retry(attempt, fail)
            except _Refused as refused:
                raise refused.error from None

    return NoRetryOnRefusal(ExponentialBackoff(cap=0.5, base=0.05), retries=1)


def _raised_by_client(exc: BaseException) -> bool:
    """True when the innermost frame is the client's code (valkey-py, asyncio, uvloop)."""
    import asyncio

    import valkey

    frames = traceback.extract_tb(exc.__traceback__)
    homes = [str(Path(module.__file__ or "").parent) + os.sep for module in (valkey, asyncio)]
    return bool(frames) and (
        any(frames[-1].filename.startswith(home) for home in homes) or "uvloop" in frames[-1].filename
    )


def _unknown_outcome(operation: str, write: bool) -> str:
    if not write:
        return ""
    retry = (
        "retry with the same operation_id" if operation == "memory_set" else "read the entry before retrying"
    )
    return f"; the write may or may not have been applied (its outcome is unknown): {retry}"


@contextmanager
def map_valkey_errors(operation: str, url: str, timeout: float, *, write: bool = False) -> Iterator[None]:
    """Translate valkey-py failures (and our call deadline) raised inside the block. `write`
    says the block changes data, so a timeout leaves its outcome unknown."""
    from valkey import exceptions as vx  # imported with the client, on first use

    unavailable = f"{operation}: Valkey at {url} is unavailable"
    unknown = _unknown_outcome(operation, write)
    try:
        yield
    except (vx.AuthenticationError, vx.AuthorizationError, vx.AuthenticationWrongNumberOfArgsError) as exc:
        raise AccessDenied(
            f"{operation}: Valkey at {url} refused the credentials ({exc}); "
            "check the user and password in the URL",
            operation=operation,
        ) from exc
    except vx.NoPermissionError as exc:
        raise AccessDenied(
            f"{operation}: Valkey at {url} does not let this user run the command ({exc}); "
            "check the user's ACL rules",
            operation=operation,
        ) from exc
    except (vx.TimeoutError, TimeoutError) as exc:  # a socket timeout, or our call's deadline
        detail = f" ({exc})" if str(exc) else ""
        raise StoreUnavailable(
            f"{operation}: Valkey at {url} did not answer within {timeout:g} s{detail}{unknown}",
            operation=operation,
        ) from exc
    except (vx.ConnectionError, vx.BusyLoadingError) as exc:
        raise StoreUnavailable(f"{unavailable}: {exc}{unknown}", operation=operation) from exc
    except (
        vx.ClusterError,  # also ClusterDownError, MasterDownError
        vx.ValkeyClusterException,  # also SlotNotCoveredError: a slot with no live node
        vx.TryAgainError,
        vx.NoScriptError,  # a node that came back without our scripts
    ) as exc:
        raise StoreUnavailable(
            f"{unavailable} for this key (cluster node or slot down: {exc}){unknown}",
            operation=operation,
        ) from exc
    except (vx.ReadOnlyError, vx.OutOfMemoryError) as exc:
        raise StoreUnavailable(f"{unavailable} for writes: {exc}", operation=operation) from exc
    except vx.ResponseError as exc:
        if str(exc).startswith(_ACCESS_CODES):  # e.g. from inside a script: not mapped by the client
            denied = f"{operation}: Valkey at {url} refused access: {exc}"
            raise AccessDenied(denied, operation=operation) from exc
        raise StoreError(
            f"{operation}: Valkey at {url} rejected the command: {exc}", operation=operation
        ) from exc
    except vx.ValkeyError as exc:  # InvalidResponse, DataError and the rest: a broken exchange
        raise StoreUnavailable(f"{unavailable}: {type(exc).__name__}: {exc}", operation=operation) from exc
    except OSError as exc:  # a socket error the client did not wrap
        raise StoreUnavailable(f"{unavailable}: {exc}{unknown}", operation=operation) from exc
    except (RuntimeError, AttributeError, TypeError, IndexError, KeyError) as exc:
        if not _raised_by_client(exc):
            raise
        raise StoreUnavailable(
            f"{unavailable}: its connection broke ({type(exc).__name__}: {exc}){unknown}",
            operation=operation,
        ) from exc
