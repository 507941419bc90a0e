"""Tokens and keywords, standing in for Dify's GPT-2 token counts and Jieba keyword extraction.

* `terms(text)`: lowercase words (letters and digits); runs of CJK characters become
  character bigrams (a lone character stays a unigram).
* `keywords(text, limit)`: Jieba-like keyword list: terms of two or more characters that are not
  English stopwords, most frequent first (ties: first occurrence), at most `limit` of them;
  with `keep_case`, as economy datasets store them: case kept (`Cache` is not `cache`).
* `token_count(text)`: approximate model tokens: words plus punctuation marks.
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["keywords", "terms", "token_count"]

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TERM = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_TOKEN = re.compile(r"\w+|[^\w\s]")

_STOPWORDS_TEXT = """
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers him his how i if in into is it its itself just me more most my no nor not of
off on once only or other our ours out over own same she should so some such than that the their
theirs them then there these they this those through to too under until up very was we were what
when where which while who whom why will with would you your yours
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


def terms(text: str, *, keep_case: bool = False) -> list[str]:
    """Every term of `text`, in order (see the module docstring)."""
    out: list[str] = []
    for match in _TERM.finditer(text if keep_case else text.lower()):
        word = match.group()
        if _CJK_RUN.fullmatch(word):
            out.extend([word] if len(word) == 1 else [word[i : i + 2] for i in range(len(word) - 1)])
        else:
            out.append(word)
    return out


def keywords(text: str, limit: int | None = 10, *, keep_case: bool = False) -> list[str]:
    """The most frequent non-stopword terms of two or more characters."""
    found = terms(text, keep_case=keep_case)
    counts = Counter(t for t in found if len(t) >= 2 and t.lower() not in STOPWORDS)
    ranked = sorted(counts, key=lambda t: -counts[t])  # stable: ties keep first occurrence
    return ranked if limit is None else ranked[:limit]


def token_count(text: str) -> int:
    return len(_TOKEN.findall(text))
