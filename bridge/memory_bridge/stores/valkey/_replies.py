"""Valkey's replies read into Python values."""

from __future__ import annotations

from typing import Any


def hash_fields(reply: list[Any] | dict[str, str]) -> dict[str, str]:
    """A hash's fields from HGETALL's reply (a dict) or a script's (a field, value, ... list);
    the client decodes both to str."""
    if isinstance(reply, dict):
        return reply
    flat = iter(reply)
    return dict(zip(flat, flat, strict=True))
