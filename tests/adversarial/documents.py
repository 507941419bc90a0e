"""A large document for fairness tests and the big-write benchmark."""

from __future__ import annotations

import random

MARKERS = ("firstmarkerquokka", "middlemarkerpangolin", "lastmarkerokapi")
"""Words found only at the start, the middle and the end of `big_document()`."""


def big_document(chars: int = 500_000) -> str:
    """`chars` characters of sentences in paragraphs (the same every time), with MARKERS."""
    rnd = random.Random(32)
    words = ["".join(rnd.choices("abcdefghijklmnopqrstuvwxyz", k=rnd.randint(3, 9))) for _ in range(3000)]
    sentences: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rnd.choices(words, k=rnd.randint(6, 18))).capitalize() + "."
        sentence += "\n\n" if rnd.random() < 0.1 else " "
        sentences.append(sentence)
        size += len(sentence)
    body = "".join(sentences)
    middle = len(body) // 2
    text = f"{MARKERS[0]} {body[:middle]} {MARKERS[1]} {body[middle:]}"
    tail = f" {MARKERS[2]}."
    return text[: chars - len(tail)] + tail
