"""Ranking entries by a free-text query in process.

The same rules as the embedded store's FTS5 ranking: every query word is a prefix
match against the words of the title, id, tags and body (whole words below three
characters); a word that fewer entries contain counts more (inverse document
frequency); title matches weigh most. Matching is done by compiled regular
expressions, so the cost per candidate stays small.

The candidates come from a scan of every entry or, once it is built, from the store's
word index (`entry_words` are the words an entry is indexed under: a query term matches an
entry exactly when it begins one of them, or equals one when shorter than three
characters), so both paths rank the same entries the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

from .._base import Entry
from .._query import words

__all__ = ["entry_words", "rank"]

_WEIGHTS = (("title", 6.0), ("id", 4.0), ("tags", 4.0), ("body", 1.0))


def _pattern(term: str) -> re.Pattern[str]:
    whole = r"\b" if len(term) < 3 else ""
    return re.compile(rf"\b{re.escape(term)}{whole}")


def entry_words(id: str, title: str, body: str, tags: Sequence[str]) -> list[str]:
    """The distinct words of the texts `rank` matches a query against, sorted."""
    found: set[str] = set()
    for text in (title, id, " ".join(tags), body):
        found.update(words(text))
    return sorted(found)


def _counts(entry: Entry, patterns: dict[str, re.Pattern[str]]) -> dict[str, tuple[int, ...]]:
    """term -> occurrences in (title, id, tags, body); only terms that occur somewhere."""
    texts = (entry.title.lower(), entry.id.lower(), " ".join(entry.tags).lower(), entry.body.lower())
    counts: dict[str, tuple[int, ...]] = {}
    for term, pattern in patterns.items():
        found = tuple(len(pattern.findall(text)) for text in texts)
        if any(found):
            counts[term] = found
    return counts


def rank(
    entries: Sequence[Entry], terms: list[str], total: int | None = None
) -> tuple[list[Entry], Literal["all", "any"]]:
    """Entries with every term, best first; if none has them all, those with any term.

    `total` is the number of entries searched (for the inverse document frequency) when
    `entries` holds only those that may match; by default, `len(entries)`."""
    patterns = {term: _pattern(term) for term in terms}
    matched = [(entry, counts) for entry in entries if (counts := _counts(entry, patterns))]
    frequency = {t: sum(1 for _, counts in matched if t in counts) for t in terms}
    searched = len(entries) if total is None else total
    idf = {t: math.log(1 + searched / f) if f else 0.0 for t, f in frequency.items()}

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
