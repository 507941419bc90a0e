"""Workspace globs: RE2 matches exactly what the backtracking translation matched."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_bridge import InvalidInput
from memory_bridge.core._glob import GlobSet

_PIECES = ["**/", "**", "*", "?", "a", "b", "/", ".", "md", "\x00", "é"]
PATTERNS = st.lists(st.sampled_from(_PIECES), max_size=6).map("".join)
PATHS = st.lists(st.sampled_from(["a", "b", "/", ".", "md", "é", "\x00"]), max_size=10).map("".join)


def backtracking(pattern: str) -> re.Pattern[str]:
    """The translation scan_documents used before (exponential on many stars)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


@settings(max_examples=400, derandomize=True, database=None)
@given(pattern=PATTERNS, path=PATHS)
def test_same_answers_as_the_backtracking_translation(pattern: str, path: str) -> None:
    expected = backtracking(pattern).match(path) is not None
    assert GlobSet((pattern,), field="include").matches(path) is expected


def test_a_glob_bomb_is_answered() -> None:
    bomb = GlobSet(("*a" * 40 + "b",), field="include")
    assert not bomb.matches("a" * 4000)


def test_several_globs_and_none() -> None:
    docs = GlobSet(("**/*.md", "notes/*"), field="include")
    assert docs.matches("a.md") and docs.matches("x/y/a.md") and docs.matches("notes/n")
    assert not docs.matches("notes/sub/n") and not docs.matches("a.txt")
    assert not GlobSet((), field="ignore").matches("a.md")


def test_a_lone_surrogate_names_the_field() -> None:
    with pytest.raises(InvalidInput, match="ignore"):
        GlobSet(("\ud800*.md",), field="ignore")
