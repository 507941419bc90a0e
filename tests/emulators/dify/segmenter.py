"""Cleaning and splitting a document into segments, as Dify's indexing job does (approximately).

* Cleaning (always): `<|` -> `<`, `|>` -> `>`, control characters and U+FFFE removed.
  `remove_extra_spaces`: 3+ newlines -> 2, runs of 2+ horizontal spaces -> one space.
  `remove_urls_emails`: e-mail addresses and http(s) URLs removed. `remove_stopwords` is a no-op
  (Dify accepts it but does nothing with it).
* `automatic` mode: a recursive splitter (LangChain's algorithm, which Dify uses) over the separators
  `"\\n\\n"`, `"。"`, `". "`, `" "`, `""`, merging neighbouring pieces up to 500 tokens with
  50 tokens of overlap.
* `custom` mode (and hierarchical parents): split on the fixed `separator` (a literal `\\n` means a
  newline); every piece longer than `max_tokens` is split again recursively as above. Hierarchical
  `parent_mode: "full-doc"` keeps the whole text as one segment (child chunks are not emulated).
* Tokens are approximated by `text.token_count` (words plus punctuation), not a model tokenizer.
* Each segment is stripped, loses its leading punctuation (Dify's `remove_leading_symbols`, which keeps a
  leading markdown link), and is dropped if empty.
* `max_tokens` outside [50, 4000] or an overlap larger than the chunk size raises `IndexingFailure`
  (the document then ends in `indexing_status: "error"`).
"""

from __future__ import annotations

import re
from typing import Any

from .process_rule import ProcessRule
from .text import token_count

__all__ = ["IndexingFailure", "split_document"]

_SEPARATORS = ["\n\n", "。", ". ", " ", ""]
_MAX_SEGMENTATION_TOKENS = 4000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe]")
_EXTRA_NEWLINES = re.compile(r"\n{3,}")
_EXTRA_SPACES = re.compile(r"[\t\f\r\x20\u00a0\u1680\u180e\u2000-\u200a\u202f\u205f\u3000]{2,}")
_EMAIL = re.compile(r"([a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\.[a-zA-Z0-9-.]+)")
_URL = re.compile(r"https?://[^\s]+")
_LEADING_SYMBOLS = re.compile(
    r"^[\u2000-\u206F\u2E00-\u2E7F\u3000-\u303F!\"#$%&'()*+,\-./:;<=>?@\[\]^_`{|}~]+"
)
_MARKDOWN_LINK = re.compile(r"^\[([^\]]+)\]\((https?://[^)]+)\)")


class IndexingFailure(Exception):
    """The asynchronous indexing job fails with this message."""


def _clean(text: str, rules: dict[str, Any]) -> str:
    text = _CONTROL.sub("", text.replace("<|", "<").replace("|>", ">"))
    enabled = {r["id"] for r in rules.get("pre_processing_rules", []) if r.get("enabled")}
    if "remove_extra_spaces" in enabled:
        text = _EXTRA_SPACES.sub(" ", _EXTRA_NEWLINES.sub("\n\n", text))
    if "remove_urls_emails" in enabled:
        text = _URL.sub("", _EMAIL.sub("", text))
    return text


def _join(pieces: list[str], separator: str) -> str | None:
    text = separator.join(pieces).strip()
    return text or None


def _merge(splits: list[str], separator: str, size: int, overlap: int) -> list[str]:
    """LangChain's `_merge_splits`: greedy packing up to `size` tokens, carrying `overlap` tokens."""
    sep_len = token_count(separator)
    docs: list[str] = []
    current: list[str] = []
    total = 0
    for piece in splits:
        length = token_count(piece)
        if current and total + length + sep_len > size:
            joined = _join(current, separator)
            if joined is not None:
                docs.append(joined)
            while current and (total > overlap or total + length + sep_len > size):
                total -= token_count(current[0]) + (sep_len if len(current) > 1 else 0)
                current = current[1:]
        current.append(piece)
        total += length + (sep_len if len(current) > 1 else 0)
    joined = _join(current, separator)
    return [*docs, joined] if joined is not None else docs


def _recursive(text: str, size: int, overlap: int, separators: list[str]) -> list[str]:
    """LangChain's recursive character splitter with token lengths."""
    separator, rest = separators[-1], []
    for i, candidate in enumerate(separators):
        if candidate == "" or candidate in text:
            separator, rest = candidate, separators[i + 1 :]
            break
    splits = [s for s in (text.split(separator) if separator else list(text)) if s]
    chunks: list[str] = []
    good: list[str] = []
    for piece in splits:
        if token_count(piece) < size:
            good.append(piece)
            continue
        if good:
            chunks.extend(_merge(good, separator, size, overlap))
            good = []
        chunks.extend(_recursive(piece, size, overlap, rest) if rest else [piece])
    if good:
        chunks.extend(_merge(good, separator, size, overlap))
    return chunks


def _tidy(chunk: str) -> str:
    chunk = chunk.strip()
    if _MARKDOWN_LINK.match(chunk):
        return chunk
    return _LEADING_SYMBOLS.sub("", chunk).strip()


def split_document(text: str, rule: ProcessRule) -> list[str]:
    """The segments' contents for `text` under `rule` (see the module docstring)."""
    rules = rule.rules
    segmentation = rules["segmentation"]
    text = _clean(text, rules)
    if rule.mode == "hierarchical" and rules.get("parent_mode") == "full-doc":
        pieces = [text]
    else:
        size = int(segmentation["max_tokens"])
        overlap = int(segmentation.get("chunk_overlap") or 0)
        if rule.mode != "automatic" and not 50 <= size <= _MAX_SEGMENTATION_TOKENS:
            raise IndexingFailure(
                f"Custom segment length should be between 50 and {_MAX_SEGMENTATION_TOKENS}."
            )
        if overlap > size:
            raise IndexingFailure(
                f"Got a larger chunk overlap ({overlap}) than chunk size ({size}), should be smaller."
            )
        if rule.mode == "automatic":
            pieces = _recursive(text, size, overlap, _SEPARATORS)
        else:
            separator = str(segmentation["separator"]).replace("\\n", "\n")
            pieces = []
            for piece in text.split(separator):
                too_long = token_count(piece) > size
                pieces.extend(_recursive(piece, size, overlap, _SEPARATORS) if too_long else [piece])
    return [chunk for chunk in (_tidy(p) for p in pieces) if chunk]
