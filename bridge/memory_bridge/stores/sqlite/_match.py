"""Turning query terms into an FTS5 match expression."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

__all__ = ["PREFIX_MIN", "match_expression", "tag_clause"]

PREFIX_MIN = 3


def match_expression(
    terms: list[str], mode: Literal["all", "any"], prefix_min: int | None = PREFIX_MIN
) -> str:
    """Each term as a quoted query, joined with AND ("all") or OR ("any"). Terms of
    `prefix_min` characters or more match as word prefixes (`rotat` finds `rotation`);
    shorter ones match whole words only, so `be` does not find `bearer`. With `prefix_min`
    None every term matches whole words (a stemming index matches other forms anyway).

    Terms are runs of word characters, so they never contain a quote.
    """
    joiner = " AND " if mode == "all" else " OR "
    words = joiner.join(
        f'"{term}"*' if prefix_min is not None and len(term) >= prefix_min else f'"{term}"' for term in terms
    )
    return f"({words})"


def tag_clause(tags: Sequence[str]) -> str:
    """Restrict a match to entries whose tags column holds each tag's words as a phrase.

    The full-text index intersects this with the query words far faster than a join on
    the tag table can; it is a superset (`rapid-api` also matches the phrase "rapid api"),
    so the exact tag filter still applies afterwards.
    """
    phrases = [" ".join(re.findall(r"\w+", tag.lower())) for tag in tags]
    return "".join(f' AND tags : "{phrase}"' for phrase in phrases if phrase)
