"""Ranking entries by a free-text query in process.

The same rules as the embedded store's FTS5 ranking: every query word is a prefix
match against the words of the title, id, tags and body (whole words below three
characters); a word that fewer entries contain counts more (inverse document
frequency); title matches weigh most.

A term's weight comes from store-wide statistics (`Stats`), as FTS5's bm25 takes its
own from the whole table, whatever the filter: the live entries, and per term its
document frequency, the number of entries holding each word it matches, added up over
those words. The word index keeps both in the scripts that write entries (`memcount`,
and each word's hash, whose size is the word's document frequency), so a filtered search
needs no count of its own, and the script, a cluster's shards added up in the bridge and
a scan over every entry all rank by the same numbers.

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

__all__ = [
    "Candidate",
    "Stats",
    "count_stats",
    "entry_terms",
    "matches",
    "order",
    "rank",
    "score",
    "term_matches",
    "weights",
]

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


@dataclass(frozen=True, slots=True)
class Stats:
    """Store-wide statistics of a query: the live entries, and per term its document
    frequency (see the module's doc)."""

    searched: int
    frequency: Mapping[str, int]


def term_matches(term: str, word: str) -> bool:
    """Whether a query term matches an indexed word: a prefix, or the whole word when short."""
    return word.startswith(term) if len(term) >= 3 else word == term


def count_stats(entries: Sequence[Entry], terms: list[str]) -> Stats:
    """The statistics of `entries` (every entry of the store), counted as the index keeps them."""
    frequency = dict.fromkeys(terms, 0)
    for e in entries:
        found = entry_terms(e.id, e.title, e.body, e.tags)
        for term in terms:
            frequency[term] += sum(1 for word in found if term_matches(term, word))
    return Stats(len(entries), frequency)


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


def weights(terms: list[str], stats: Stats) -> dict[str, float]:
    """term -> its inverse document frequency in the store."""
    return {t: math.log(1 + stats.searched / f) if (f := stats.frequency[t]) else 0.0 for t in terms}


def score(counts: Mapping[str, tuple[int, ...]], idf: Mapping[str, float]) -> float:
    """A candidate's score from its counts and the terms' `weights`."""
    total = 0.0
    for term, found in counts.items():
        for weight, tf in zip(_WEIGHTS, found, strict=True):
            if tf:
                total += idf[term] * weight * (1 + math.log(tf))
    return total


def order(candidates: Sequence[Candidate], terms: list[str], stats: Stats) -> tuple[list[Candidate], Mode]:
    """Candidates with every term, best first; if none has them all, those with any term."""
    idf = weights(terms, stats)
    mode: Mode = "all"
    chosen = [c for c in candidates if len(c.counts) == len(terms)]
    if not chosen and len(terms) > 1:
        mode = "any"
        chosen = list(candidates)
    scored = [(score(c.counts, idf), c.hits, c.updated, c) for c in chosen]
    # score, hits and updated descending, then id (sorts are stable, also in reverse)
    scored.sort(key=lambda item: item[3].id)
    scored.sort(key=lambda item: item[:3], reverse=True)
    return [item[3] for item in scored], mode


def matches(entries: Sequence[Entry], terms: list[str]) -> list[Candidate]:
    """The entries with any term, with their counts read from their texts."""
    patterns = {term: _pattern(term) for term in terms}
    return [Candidate(e.id, e.hits, e.updated, counts) for e in entries if (counts := _counts(e, patterns))]


def rank(entries: Sequence[Entry], terms: list[str], stats: Stats) -> tuple[list[Entry], Mode]:
    """Entries with every term, best first (scored by the store's `stats`); if none has
    them all, those with any term."""
    by_id = {e.id: e for e in entries}
    ordered, mode = order(matches(entries, terms), terms, stats)
    return [by_id[c.id] for c in ordered], mode
