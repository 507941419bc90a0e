"""Splitting a document into passages for retrieval."""

from __future__ import annotations

import re

__all__ = ["chunk_text"]

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _pieces(text: str, limit: int) -> list[str]:
    """Paragraphs, split further at sentences and then hard at `limit` when too long."""
    out: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if len(paragraph) <= limit:
            out.append(paragraph)
            continue
        for sentence in _SENTENCE.split(paragraph):
            while len(sentence) > limit:
                out.append(sentence[:limit])
                sentence = sentence[limit:]
            if sentence.strip():
                out.append(sentence.strip())
    return out


def chunk_text(text: str, *, limit: int = 1000, overlap: int = 150) -> list[str]:
    """Passages of at most about `limit` characters, each starting with the tail of the
    previous one (`overlap` characters) so a fact split across a boundary stays findable."""
    passages: list[str] = []
    current = ""
    for piece in _pieces(text, limit):
        if current and len(current) + len(piece) + 2 > limit:
            passages.append(current)
            tail = current[-overlap:]
            current = tail[tail.find(" ") + 1 :] if " " in tail else tail
        current = f"{current}\n\n{piece}" if current else piece
    if current or not passages:
        passages.append(current)
    return passages
