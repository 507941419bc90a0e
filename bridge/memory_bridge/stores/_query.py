"""Splitting a free-text query into the words every store ranks by."""

from __future__ import annotations

import re

__all__ = ["MAX_QUERY_TERMS", "query_terms", "words"]

MAX_QUERY_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """The lower-cased words of a text."""
    return _WORD.findall(text.lower())


def query_terms(query: str) -> list[str]:
    """The distinct words of a query, in order, at most MAX_QUERY_TERMS."""
    return list(dict.fromkeys(words(query)))[:MAX_QUERY_TERMS]
