"""The one place valkey-py exceptions become memctl errors.

Every exception class valkey-py defines maps to the tree, and so do the internal errors its
cluster client lets out while a node goes away (a `RuntimeError` from a closed transport,
an `AttributeError` on a connection already dropped): they are outages, not bugs of ours,
and an unmapped one used to end the bridge from a background sweep.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..._errors import StoreError, StoreUnavailable

__all__ = ["map_valkey_errors"]


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
    except vx.AuthenticationError as exc:
        raise StoreUnavailable(
            f"{operation}: Valkey at {url} refused the credentials ({exc}); "
            "check the user and password in the URL",
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
