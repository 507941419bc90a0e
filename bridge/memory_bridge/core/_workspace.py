"""Finding and reading workspace files for scan_documents and absorb_files, safely.

Globs: `**/` is any number of directories, `**` anything, `*` anything but `/`, `?` one
character but `/`, matched against the whole POSIX relative path. Symlinks are never
followed out of the workspace: scanning skips them, and absorbing refuses a path whose
real location is outside the workspace.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

__all__ = [
    "DEFAULT_IGNORE",
    "DEFAULT_INCLUDE",
    "AbsorbRead",
    "ScannedFile",
    "read_workspace_file",
    "scan_workspace",
]

DEFAULT_INCLUDE = ("**/*.md", "**/*.mdx", "**/*.markdown", "**/*.txt", "**/*.rst", "**/*.adoc")

_IGNORED_NAMES = (
    ".git",
    ".svn",
    ".hg",
    "CVS",
    ".DS_Store",
    "Thumbs.db",
    "desktop.ini",
    ".idea",
    ".vs",
    "*~",
    "*.swp",
    "*.swo",
    "*.bak",
    "*.orig",
    ".#*",
    "*.lock",
    "*.log",
    "*.tsbuildinfo",
    "*.sqlite",
    "*.sqlite3",
    "*.db-journal",
    "node_modules",
    "bower_components",
    "jspm_packages",
    ".yarn",
    ".pnp.*",
    ".pnpm-store",
    ".next",
    ".nuxt",
    ".svelte-kit",
    ".remix",
    ".astro",
    ".docusaurus",
    ".vuepress",
    ".vitepress",
    ".vercel",
    ".netlify",
    ".firebase",
    ".parcel-cache",
    ".rollup.cache",
    ".turbo",
    ".cache",
    ".eslintcache",
    ".stylelintcache",
    "coverage",
    ".nyc_output",
    "__pycache__",
    "*.pyc",
    ".venv",
    "venv",
    ".virtualenv",
    ".tox",
    ".nox",
    ".pytest_cache",
    ".mypy_cache",
    ".pytype",
    ".ruff_cache",
    ".pyre",
    ".ipynb_checkpoints",
    "*.egg-info",
    "site-packages",
    "Pipfile.lock",
    ".bundle",
    "target",
    ".gradle",
    ".mvn",
    "*.class",
    "obj",
    "DerivedData",
    "Pods",
    "Carthage",
    "xcuserdata",
    ".swiftpm",
    ".build",
    "composer.phar",
    "_build",
    "deps",
    ".elixir_ls",
    ".stack-work",
    "dist-newstyle",
    "dist",
    "build",
    "_site",
    ".jekyll-cache",
    "vendor",
    ".terraform",
    "*.tfstate",
    "*.tfstate.backup",
    ".serverless",
    ".vagrant",
    ".memory",
)
# Each name at any depth, as itself and as a directory. Unlike the seed, a user's own
# `memory/` directory is not ignored: only memctl's `.memory/`.
DEFAULT_IGNORE = tuple(g for name in _IGNORED_NAMES for g in (f"**/{name}", f"**/{name}/**"))


@lru_cache(maxsize=512)
def _glob(pattern: str) -> re.Pattern[str]:
    out = []
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
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    return any(_glob(p).match(path) for p in patterns)


@dataclass(frozen=True, slots=True)
class ScannedFile:
    rel_path: str
    size: int
    mtime: str

    def to_dict(self) -> dict[str, object]:
        return {"relPath": self.rel_path, "docName": self.rel_path, "size": self.size, "mtime": self.mtime}


def scan_workspace(root: Path, include: tuple[str, ...], ignore: tuple[str, ...]) -> list[ScannedFile]:
    """Files under `root` matching an include glob and no ignore glob; symlinks skipped."""
    found: list[ScannedFile] = []
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(directory, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not os.path.islink(os.path.join(directory, d)) and not _matches(rel_dir + d, ignore)
        )
        for name in filenames:
            rel = rel_dir + name
            full = os.path.join(directory, name)
            info = os.lstat(full)
            if not stat.S_ISREG(info.st_mode) or _matches(rel, ignore) or not _matches(rel, include):
                continue
            mtime = datetime.fromtimestamp(info.st_mtime, tz=UTC).isoformat(timespec="seconds")
            found.append(ScannedFile(rel, info.st_size, mtime.replace("+00:00", "Z")))
    return sorted(found, key=lambda f: f.rel_path)


@dataclass(frozen=True, slots=True)
class AbsorbRead:
    rel_path: str
    text: str | None = None
    size: int = 0
    error: str | None = None


def read_workspace_file(root: Path, requested: str, max_bytes: int) -> AbsorbRead:
    """Read one workspace file as UTF-8, refusing anything that is not inside `root`."""
    rel = requested.replace("\\", "/").lstrip("/")
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    if os.path.commonpath([real_root, real]) != real_root:
        return AbsorbRead(rel, error="path escapes the workspace (directly or through a symlink)")
    rel = os.path.relpath(real, real_root).replace(os.sep, "/")
    try:
        descriptor = os.open(real, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        return AbsorbRead(rel, error=f"cannot open: {exc.strerror}")
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return AbsorbRead(rel, error="not a regular file")
        if info.st_size > max_bytes:
            return AbsorbRead(
                rel, size=info.st_size, error=f"file is {info.st_size} bytes, over the {max_bytes} limit"
            )
        data = handle.read(max_bytes + 1)
    try:
        return AbsorbRead(rel, text=data.decode("utf-8"), size=len(data))
    except UnicodeDecodeError:
        return AbsorbRead(rel, size=len(data), error="not UTF-8 text")
