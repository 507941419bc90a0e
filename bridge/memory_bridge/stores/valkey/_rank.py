"""Ranking entries by a free-text query in process (the Valkey store has no text index).

The same rules as the embedded store's FTS5 ranking: every query word is a prefix
match against the words of the title, id, tags and body; a word that fewer entries
contain counts more (inverse document frequency); title matches weigh most.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from .._base import Entry
from .._query import words

__all__ = ["rank"]

_WEIGHTS = (("title", 6.0), ("id", 4.0), ("tags", 4.0), ("body", 1.0))


def _fields(entry: Entry) -> dict[str, list[str]]:
    return {
        "title": words(entry.title),
        "id": words(entry.id),
        "tags": words(" ".join(entry.tags)),
        "body": words(entry.body),
    }


def _may_match(entry: Entry, terms: list[str]) -> bool:
    text = " ".join((entry.title, entry.id, " ".join(entry.tags), entry.body)).lower()
    return any(term in text for term in terms)


def _matches(field_words: list[str], term: str) -> int:
    """Occurrences of the term as a word prefix (whole words only below three characters)."""
    if len(term) < 3:
        return field_words.count(term)
    return sum(1 for word in field_words if word.startswith(term))


def rank(entries: Sequence[Entry], terms: list[str]) -> tuple[list[Entry], Literal["all", "any"]]:
    """Entries with every term, best first; if none has them all, those with any term."""
    # A prefix of a word is a substring of the text: skip entries that cannot match at all.
    entries = [e for e in entries if _may_match(e, terms)]
    indexed = [(entry, _fields(entry)) for entry in entries]
    hits: list[dict[str, dict[str, int]]] = [
        {term: {name: _matches(field, term) for name, field in fields.items()} for term in terms}
        for _, fields in indexed
    ]
    present = [{t for t, by_field in h.items() if any(by_field.values())} for h in hits]
    frequency = {t: sum(1 for p in present if t in p) for t in terms}
    idf = {t: math.log(1 + len(entries) / f) if f else 0.0 for t, f in frequency.items()}

    def score(i: int) -> float:
        total = 0.0
        for term in present[i]:
            for name, weight in _WEIGHTS:
                tf = hits[i][term][name]
                if tf:
                    total += idf[term] * weight * (1 + math.log(tf))
        return total

    mode: Literal["all", "any"] = "all"
    chosen = [i for i, p in enumerate(present) if len(p) == len(terms)]
    if not chosen and len(terms) > 1:
        mode = "any"
        chosen = [i for i, p in enumerate(present) if p]
    scored = sorted(
        chosen,
        key=lambda i: (-score(i), -indexed[i][0].hits, _desc(indexed[i][0].updated), indexed[i][0].id),
    )
    return [indexed[i][0] for i in scored], mode


def _desc(text: str) -> tuple[int, ...]:
    """A sort key that orders strings descending."""
    return (*(-ord(c) for c in text), 0)
