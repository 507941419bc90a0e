"""Ranking entries by a free-text query in process (the Valkey store has no text index).

The same rules as the embedded store's FTS5 ranking: every query word is a prefix
match against the words of the title, id, tags and body (whole words below three
characters); a word that fewer entries contain counts more (inverse document
frequency); title matches weigh most. Matching is done by compiled regular
expressions, so the cost per candidate stays small.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

from .._base import Entry

__all__ = ["rank"]

_WEIGHTS = (("title", 6.0), ("id", 4.0), ("tags", 4.0), ("body", 1.0))


def _pattern(term: str) -> re.Pattern[str]:
    whole = r"\b" if len(term) < 3 else ""
    return re.compile(rf"\b{re.escape(term)}{whole}")


def _counts(entry: Entry, patterns: dict[str, re.Pattern[str]]) -> dict[str, tuple[int, ...]]:
    """term -> occurrences in (title, id, tags, body); only terms that occur somewhere."""
    texts = (entry.title.lower(), entry.id.lower(), " ".join(entry.tags).lower(), entry.body.lower())
    counts: dict[str, tuple[int, ...]] = {}
    for term, pattern in patterns.items():
        found = tuple(len(pattern.findall(text)) for text in texts)
        if any(found):
            counts[term] = found
    return counts


def rank(entries: Sequence[Entry], terms: list[str]) -> tuple[list[Entry], Literal["all", "any"]]:
    """Entries with every term, best first; if none has them all, those with any term."""
    patterns = {term: _pattern(term) for term in terms}
    matched = [(entry, counts) for entry in entries if (counts := _counts(entry, patterns))]
    frequency = {t: sum(1 for _, counts in matched if t in counts) for t in terms}
    idf = {t: math.log(1 + len(entries) / f) if f else 0.0 for t, f in frequency.items()}

    def score(counts: dict[str, tuple[int, ...]]) -> float:
        total = 0.0
        for term, found in counts.items():
            for (_, weight), tf in zip(_WEIGHTS, found, strict=True):
                if tf:
                    total += idf[term] * weight * (1 + math.log(tf))
        return total

    mode: Literal["all", "any"] = "all"
    chosen = [(entry, counts) for entry, counts in matched if len(counts) == len(terms)]
    if not chosen and len(terms) > 1:
        mode = "any"
        chosen = matched
    scored = [(score(counts), entry) for entry, counts in chosen]
    # score, then hits, both descending; then most recently updated; then id (stable sorts)
    scored.sort(key=lambda item: item[1].id)
    scored.sort(key=lambda item: item[1].updated, reverse=True)
    scored.sort(key=lambda item: (item[0], item[1].hits), reverse=True)
    return [entry for _, entry in scored], mode
