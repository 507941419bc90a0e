"""Splitting a free-text query into the words every store ranks by."""

from __future__ import annotations

import re

__all__ = ["MAX_QUERY_TERMS", "STOPWORDS", "query_terms", "words"]

MAX_QUERY_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """The lower-cased words of a text."""
    return _WORD.findall(text.lower())


# Words too common to tell documents apart; as prefixes they would match almost anything.
STOPWORDS = frozenset(
    {
        "a",
        "about",
        "after",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "being",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "for",
        "from",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "just",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "out",
        "over",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "too",
        "up",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    }
)


def query_terms(query: str) -> list[str]:
    """The distinct words of a query, in order, at most MAX_QUERY_TERMS; stop words are
    left out unless the query has nothing else."""
    distinct = list(dict.fromkeys(words(query)))
    meaningful = [w for w in distinct if w not in STOPWORDS]
    return (meaningful or distinct)[:MAX_QUERY_TERMS]
