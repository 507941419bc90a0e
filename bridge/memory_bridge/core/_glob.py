"""Workspace globs, matched in time linear in the path's length, whatever the pattern.

`**/` is any number of directories, `**` anything, `*` anything but `/`, `?` one
character but `/`; a pattern matches the whole POSIX relative path. A set of patterns is
translated once into one RE2 expression: RE2 never backtracks, so a pattern such as
`*a*a*a*a*a*a*b` costs no more than `*.md` (Python's `re` took minutes on it).
"""

from __future__ import annotations

import re2

from .._errors import InvalidInput

__all__ = ["GlobSet"]

_MAX_PROGRAM_BYTES = 64 << 20  # RE2's memory budget for one compiled set


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
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
            out.append(f"\\x{{{ord(pattern[i]):x}}}")
            i += 1
    return "".join(out)


def _text(path: str) -> str:
    """`path` as valid Unicode: a lone surrogate (from a name that is not UTF-8) becomes U+FFFDs."""
    return path.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


class GlobSet:
    """Patterns compiled once; `matches(path)` is true when any of them matches."""

    def __init__(self, patterns: tuple[str, ...], *, field: str) -> None:
        self.patterns = patterns
        if any(_text(p) != p for p in patterns):
            raise InvalidInput(field, "a glob is not valid Unicode text (lone surrogate)")
        options = re2.Options()
        options.max_mem = _MAX_PROGRAM_BYTES
        options.dot_nl = True
        expression = "|".join(f"(?:{_translate(p)})" for p in patterns) or "[^\\x{0}-\\x{10ffff}]"
        try:
            self._regex = re2.compile(expression, options)
        except re2.error as exc:
            raise InvalidInput(field, f"the globs are too large to match safely ({exc})") from exc

    def matches(self, path: str) -> bool:
        return self._regex.fullmatch(_text(path)) is not None
