"""Turning query terms into an FTS5 match expression."""

from __future__ import annotations

from typing import Literal

__all__ = ["match_expression"]


def match_expression(terms: list[str], mode: Literal["all", "any"]) -> str:
    """Each term as a quoted prefix query, joined with AND ("all") or OR ("any").

    Terms are runs of word characters, so they never contain a quote.
    """
    joiner = " AND " if mode == "all" else " OR "
    return joiner.join(f'"{term}"*' for term in terms)
