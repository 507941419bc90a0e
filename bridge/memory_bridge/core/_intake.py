"""Why a workspace path must not be taken in: the one verdict absorb and scan share.

A path is refused when it is in memctl's `.memory/` or git's `.git/` (always), when it
is a well-known secret file or git ignores it (unless `absorb_allow` names it), or when
git, asked about a work tree, could not answer. The rules are `_private`'s and git's
answer `_gitignore`'s; this module puts them together for a batch of paths.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ._gitignore import Unanswered, git_ignored
from ._private import PrivateRules

__all__ = ["Refusal", "RefusalKind", "refusals"]

RefusalKind = Literal["memctl-or-git", "secret-file", "gitignored", "gitignore-unknown"]
_HOW = "; to take it anyway, add it to absorb_allow in .memory/config.toml"


@dataclass(frozen=True, slots=True)
class Refusal:
    """A private path: the rule's kind, and a reason a person can act on."""

    kind: RefusalKind
    reason: str


async def refusals(
    root: Path, paths: Iterable[str], rules: PrivateRules, *, names: Iterable[str] = ()
) -> dict[str, Refusal]:
    """Each of `paths` (real POSIX paths relative to `root`, no link on the way) and of
    `names` (paths as asked for, `..` folded, judged by name only: git refuses to look
    through a link) that must not be taken in."""
    found: dict[str, Refusal] = {}
    ask_git: list[str] = []
    real = set(paths)
    for path in dict.fromkeys(p for p in (*real, *names) if p):
        if (always := rules.always(path)) is not None:
            found[path] = Refusal("memctl-or-git", always)
        elif (secret := rules.secret(path)) is not None:
            found[path] = Refusal("secret-file", f"private: {secret}{_HOW}")
        elif path in real and not rules.allowed(path):
            ask_git.append(path)
    ignored = await git_ignored(root, ask_git)
    if isinstance(ignored, Unanswered):
        for path in ask_git:
            found[path] = Refusal("gitignore-unknown", f"private until known: {ignored.reason}{_HOW}")
    else:
        for path in ignored.intersection(ask_git):
            found[path] = Refusal("gitignored", f"private: the workspace's .gitignore ignores it{_HOW}")
    return found
