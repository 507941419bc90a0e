"""Turning query terms into an FTS5 match expression."""

from __future__ import annotations

from typing import Literal

__all__ = ["PREFIX_MIN", "match_expression"]

PREFIX_MIN = 3


def match_expression(terms: list[str], mode: Literal["all", "any"]) -> str:
    """Each term as a quoted query, joined with AND ("all") or OR ("any"). Terms of three
    characters or more match as word prefixes (`rotat` finds `rotation`); shorter ones
    match whole words only, so `be` does not find `bearer`.

    Terms are runs of word characters, so they never contain a quote.
    """
    joiner = " AND " if mode == "all" else " OR "
    return joiner.join(f'"{term}"*' if len(term) >= PREFIX_MIN else f'"{term}"' for term in terms)
