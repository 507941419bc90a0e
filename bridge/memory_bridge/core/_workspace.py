"""Finding and reading workspace files for scan_documents and absorb_files, safely.

Globs are those of `_glob`. Symlinks are never followed out of the workspace: scanning
skips them, and absorbing refuses a path whose real location is outside the workspace.
Only regular files are opened (a FIFO, socket or device is refused before any open, and
the open itself cannot block or follow a link), and a scan stops at its deadline. Both
are blocking work, for a worker thread: the tools run them with `anyio.to_thread`.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .._errors import StoreUnavailable
from ._glob import GlobSet

__all__ = [
    "DEFAULT_IGNORE",
    "DEFAULT_INCLUDE",
    "AbsorbRead",
    "ScannedFile",
    "read_workspace_file",
    "real_relative",
    "scan_workspace",
]

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC

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


@dataclass(frozen=True, slots=True)
class ScannedFile:
    rel_path: str
    size: int
    mtime: str


def _not_utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def scan_workspace(root: Path, include: GlobSet, ignore: GlobSet, deadline: float) -> list[ScannedFile]:
    """Regular files under `root` matching `include` and not `ignore`; symlinks skipped.
    Past `deadline` (a `time.monotonic()` instant) the scan stops with StoreUnavailable."""
    found: list[ScannedFile] = []
    seen = 0
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(directory, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not os.path.islink(os.path.join(directory, d)) and not ignore.matches(rel_dir + d)
        )
        for name in filenames:
            seen += 1
            if time.monotonic() > deadline:
                raise StoreUnavailable(
                    f"scan_documents: the workspace scan ran out of time after {seen} files; "
                    "narrow include or add ignore globs",
                    operation="scan_documents",
                )
            rel = rel_dir + name
            if _not_utf8(rel):
                continue  # a name no JSON client could send back to absorb it
            try:
                info = os.lstat(os.path.join(directory, name))
            except OSError:
                continue  # removed while scanning
            if not stat.S_ISREG(info.st_mode) or ignore.matches(rel) or not include.matches(rel):
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


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symbolic link that leads nowhere (dangling or a loop)"
    return "an unusual file"


def _resolve(root: Path, requested: str) -> tuple[str, str] | AbsorbRead:
    """(real path, relative path) of a request, or the refusal."""
    if "\0" in requested:
        return AbsorbRead(requested, error="the path contains a NUL byte")
    rel = requested.replace("\\", "/").lstrip("/")
    try:
        real_root = os.path.realpath(root)
        real = os.path.realpath(os.path.join(real_root, rel))
    except (OSError, ValueError) as exc:  # a name the file system cannot take
        return AbsorbRead(rel, error=f"not a usable file name: {exc}")
    if os.path.commonpath([real_root, real]) != real_root:
        return AbsorbRead(rel, error="path escapes the workspace (directly or through a symlink)")
    return real, os.path.relpath(real, real_root).replace(os.sep, "/")


def real_relative(root: Path, requested: str) -> str | None:
    """Where `requested` really is, relative to `root` (links followed), or None when it is
    outside the workspace or no usable name (reading it refuses it with the reason)."""
    resolved = _resolve(root, requested)
    return None if isinstance(resolved, AbsorbRead) else resolved[1]


def read_workspace_file(root: Path, requested: str, max_bytes: int) -> AbsorbRead:
    """Read one regular workspace file as UTF-8, refusing anything that is not inside `root`
    or not a regular file, without ever blocking on one (FIFO, device, socket)."""
    resolved = _resolve(root, requested)
    if isinstance(resolved, AbsorbRead):
        return resolved
    real, rel = resolved
    try:
        before = os.lstat(real)
        if not stat.S_ISREG(before.st_mode):
            return AbsorbRead(rel, error=f"{_kind(before.st_mode)}, not a regular file")
        descriptor = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        return AbsorbRead(rel, error=f"cannot open: {exc.strerror}")
    with os.fdopen(descriptor, "rb", closefd=True) as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
            return AbsorbRead(rel, error="the file was replaced while it was being opened")
        if info.st_size > max_bytes:
            return AbsorbRead(
                rel, size=info.st_size, error=f"file is {info.st_size} bytes, over the {max_bytes} limit"
            )
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        return AbsorbRead(rel, size=len(data), error=f"file grew over the {max_bytes} limit while read")
    try:
        return AbsorbRead(rel, text=data.decode("utf-8"), size=len(data))
    except UnicodeDecodeError:
        return AbsorbRead(rel, size=len(data), error="not UTF-8 text")
