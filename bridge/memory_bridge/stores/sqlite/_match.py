"""Turning a free-text query into an FTS5 match expression."""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["MAX_QUERY_TERMS", "match_expression", "query_terms"]

MAX_QUERY_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(query: str) -> list[str]:
    """The distinct words of a query, lower-cased, in order, at most MAX_QUERY_TERMS."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        seen.setdefault(word, None)
    return list(seen)[:MAX_QUERY_TERMS]


def match_expression(terms: list[str], mode: Literal["all", "any"]) -> str:
    """Each term as a quoted prefix query, joined with AND ("all") or OR ("any").

    Terms are runs of word characters, so they never contain a quote.
    """
    joiner = " AND " if mode == "all" else " OR "
    return joiner.join(f'"{term}"*' for term in terms)
