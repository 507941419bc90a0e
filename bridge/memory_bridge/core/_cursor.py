"""Opaque page cursors bound to the query that produced them."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from .._errors import InvalidInput

__all__ = ["decode_cursor", "encode_cursor"]


def _fingerprint(params: dict[str, Any]) -> str:
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def encode_cursor(offset: int, params: dict[str, Any]) -> str:
    raw = json.dumps({"o": offset, "k": _fingerprint(params)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None, params: dict[str, Any], *, operation: str) -> int:
    """The offset a cursor points at; 0 without one. Rejects a cursor from another query."""
    if cursor is None:
        return 0
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        offset, key = int(data["o"]), str(data["k"])
    except (ValueError, TypeError, KeyError) as exc:
        raise InvalidInput("cursor", "is not a cursor this server issued", operation=operation) from exc
    if offset < 0 or key != _fingerprint(params):
        raise InvalidInput(
            "cursor", "belongs to a different query; repeat the query without a cursor", operation=operation
        )
    return offset
