"""Every exception valkey-py can raise maps into the error tree (issue 13: 11, 12)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import valkey
from valkey import exceptions as vx

from memory_bridge import AccessDenied, StoreError, StoreUnavailable
from memory_bridge.stores.valkey._errors import map_valkey_errors

URL = "valkey://127.0.0.1:6379/0"
_SYNC_ONLY = {vx.ChildDeadlockedError}  # raised by the synchronous pool after a fork only
CLASSES = [
    cls
    for _, cls in inspect.getmembers(vx, inspect.isclass)
    if issubclass(cls, Exception) and cls.__module__ == vx.__name__ and cls not in _SYNC_ONLY
]


def raise_in_client(exc: Exception) -> None:
    """Raise `exc` from a frame that belongs to the client library, as uvloop's does."""
    code = compile("raise exc", str(Path(valkey.__file__).parent / "asyncio" / "connection.py"), "exec")
    exec(code, {"exc": exc})


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_client_exception_becomes_a_store_error(cls: type[Exception]) -> None:
    with pytest.raises(StoreError) as caught, map_valkey_errors("memory_get", URL, 2.0):
        raise cls("3999 127.0.0.1:6381")  # the shape MOVED and ASK carry
    assert "memory_get" in str(caught.value) and URL in str(caught.value)


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("unable to perform operation on <TCPTransport closed=True>; the handler is closed"),
        AttributeError("'NoneType' object has no attribute 'read_response'"),
    ],
)
def test_internal_errors_of_the_client_are_outages(exc: Exception) -> None:
    with pytest.raises(StoreUnavailable, match="connection broke"), map_valkey_errors("memory_get", URL, 2.0):
        raise_in_client(exc)


def test_our_own_bugs_are_not_hidden_as_outages() -> None:
    with pytest.raises(AttributeError), map_valkey_errors("memory_get", URL, 2.0):
        raise AttributeError("a bug of ours")


@pytest.mark.parametrize("exc", [TimeoutError(), vx.TimeoutError("Timeout reading")])
def test_a_write_that_timed_out_has_an_unknown_outcome(exc: Exception) -> None:
    with pytest.raises(StoreUnavailable) as caught, map_valkey_errors("memory_set", URL, 2.0, write=True):
        raise exc
    assert "unknown" in str(caught.value) and "same operation_id" in str(caught.value)


@pytest.mark.parametrize(
    "exc",
    [
        vx.AuthenticationError("invalid username-password pair or user is disabled."),
        vx.AuthorizationError("not allowed"),
        vx.NoPermissionError("this user has no permissions to run the 'set' command"),
        vx.ResponseError("NOPERM this user has no permissions to access one of the keys"),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_refused_credentials_are_access_denied_not_an_outage(exc: Exception) -> None:
    with pytest.raises(AccessDenied) as caught, map_valkey_errors("memory_get", URL, 2.0):
        raise exc
    assert not isinstance(caught.value, StoreUnavailable)
