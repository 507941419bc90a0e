"""The one place valkey-py exceptions become memctl errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..._errors import StoreError, StoreUnavailable

__all__ = ["map_valkey_errors"]


@contextmanager
def map_valkey_errors(operation: str, url: str, timeout: float) -> Iterator[None]:
    """Translate valkey-py failures (and our call deadline) raised inside the block."""
    from valkey import exceptions as vx  # imported with the client, on first use

    try:
        yield
    except vx.AuthenticationError as exc:
        raise StoreUnavailable(
            f"{operation}: Valkey at {url} refused the credentials ({exc}); "
            "check the user and password in the URL",
            operation=operation,
        ) from exc
    except (vx.ConnectionError, vx.TimeoutError, vx.BusyLoadingError) as exc:
        raise StoreUnavailable(
            f"{operation}: Valkey at {url} is unavailable: {exc}", operation=operation
        ) from exc
    except TimeoutError as exc:
        raise StoreUnavailable(
            f"{operation}: Valkey at {url} did not answer within {timeout:g} s", operation=operation
        ) from exc
    except vx.ResponseError as exc:
        raise StoreError(
            f"{operation}: Valkey at {url} rejected the command: {exc}", operation=operation
        ) from exc
