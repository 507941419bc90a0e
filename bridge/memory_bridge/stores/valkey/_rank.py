"""Ranking entries by a free-text query in process.

The same rules as the embedded store's FTS5 ranking: every query word is a prefix
match against the words of the title, id, tags and body (whole words below three
characters); a word that fewer entries contain counts more (inverse document
frequency); title matches weigh most.

A term's occurrences in a text are the occurrences of the text's words it matches, so
they add up word by word: the word index keeps, per word and entry, the word's count in
each of the four texts (`entry_terms`), and a search from the index orders the counts it
sums (`order`) exactly as `rank` orders what its regular expressions count in a scan.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .._base import Entry
from .._query import words

__all__ = ["Candidate", "entry_terms", "order", "rank"]

_WEIGHTS = (6.0, 4.0, 4.0, 1.0)  # title, id, tags, body
Mode = Literal["all", "any"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """An entry that matches some query term: term -> occurrences in (title, id, tags,
    body), only for the terms that occur."""

    id: str
    hits: int
    updated: str
    counts: Mapping[str, tuple[int, ...]]


def _pattern(term: str) -> re.Pattern[str]:
    whole = r"\b" if len(term) < 3 else ""
    return re.compile(rf"\b{re.escape(term)}{whole}")


def entry_terms(id: str, title: str, body: str, tags: Sequence[str]) -> dict[str, str]:
    """word -> "t,i,g,b": its occurrences in the title, id, tags and body."""
    texts = [Counter(words(text)) for text in (title, id, " ".join(tags), body)]
    found = set().union(*texts)
    return {w: ",".join(str(t[w]) for t in texts) for w in sorted(found)}


def _counts(entry: Entry, patterns: dict[str, re.Pattern[str]]) -> dict[str, tuple[int, ...]]:
    """term -> occurrences in (title, id, tags, body); only terms that occur somewhere."""
    texts = (entry.title.lower(), entry.id.lower(), " ".join(entry.tags).lower(), entry.body.lower())
    counts: dict[str, tuple[int, ...]] = {}
    for term, pattern in patterns.items():
        found = tuple(len(pattern.findall(text)) for text in texts)
        if any(found):
            counts[term] = found
    return counts


def order(
    candidates: Sequence[Candidate],
    terms: list[str],
    searched: int,
    frequency: Mapping[str, int] | None = None,
) -> tuple[list[Candidate], Mode]:
    """Candidates with every term, best first; if none has them all, those with any term.

    `searched` is the number of entries searched; `frequency` (term -> how many of them
    contain it) defaults to a count over `candidates`, which must then hold every match."""
    if frequency is None:
        frequency = {t: sum(1 for c in candidates if t in c.counts) for t in terms}
    idf = {t: math.log(1 + searched / f) if f else 0.0 for t, f in frequency.items()}

    def score(counts: Mapping[str, tuple[int, ...]]) -> float:
        total = 0.0
        for term, found in counts.items():
            for weight, tf in zip(_WEIGHTS, found, strict=True):
                if tf:
                    total += idf[term] * weight * (1 + math.log(tf))
        return total

    mode: Mode = "all"
    chosen = [c for c in candidates if len(c.counts) == len(terms)]
    if not chosen and len(terms) > 1:
        mode = "any"
        chosen = list(candidates)
    scored = [(score(c.counts), c.hits, c.updated, c) for c in chosen]
    # score, hits and updated descending, then id (sorts are stable, also in reverse)
    scored.sort(key=lambda item: item[3].id)
    scored.sort(key=lambda item: item[:3], reverse=True)
    return [item[3] for item in scored], mode


def rank(entries: Sequence[Entry], terms: list[str]) -> tuple[list[Entry], Mode]:
    """Entries with every term, best first; if none has them all, those with any term."""
    patterns = {term: _pattern(term) for term in terms}
    by_id = {e.id: e for e in entries}
    candidates = [
        Candidate(e.id, e.hits, e.updated, counts) for e in entries if (counts := _counts(e, patterns))
    ]
    ordered, mode = order(candidates, terms, len(entries))
    return [by_id[c.id] for c in ordered], mode
