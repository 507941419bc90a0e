"""Private files and directories, and replacing a file whole (readers see the old text or
the new, never part of either).

Every directory memctl creates for its own data (stores, tokens, outboxes, logs, caches) is
mode 0700 and every such file 0600 from its first byte, whatever the umask; an existing one
keeps its mode (`memctl doctor` reports one others can read). Nothing here writes through a
link (see `_links`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePath
from typing import IO

from ._links import open_beneath, open_dir, replace_in, set_mode

__all__ = [
    "MEMORY_DIR",
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "private_dir",
    "private_file",
    "replacing",
    "write_atomically",
]

MEMORY_DIR = ".memory"  # a project's memctl data: private throughout
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create `path` and its missing parents, each mode 0700; `path`."""
    missing: list[Path] = []
    here = path
    while not here.is_dir() and here != here.parent:
        missing.append(here)
        here = here.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR_MODE)  # mkdir never follows a link in its place
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue  # made by someone else meanwhile: theirs to set
        set_mode(directory, PRIVATE_DIR_MODE)  # a umask such as 0277 narrows mkdir's mode
    return path


def private_file(path: Path) -> Path:
    """Create `path` empty, mode 0600, in private directories, unless it exists; `path`.
    A link in its place, or at a folder below the workspace of its `.memory/`, is
    `LinkRefused`."""
    path = path.absolute()
    private_dir(path.parent)
    root = _default_root(path)
    # O_NONBLOCK: a FIFO planted in the file's place fails at once instead of blocking
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK
    os.close(open_beneath(root, PurePath(path.relative_to(root)), flags, PRIVATE_FILE_MODE))
    return path


@contextmanager
def replacing(
    path: Path, *, mode: int | None = None, suffix: str = ".tmp", root: Path | None = None
) -> Iterator[IO[bytes]]:
    """Replace `path` whole with what the block writes to the file it is given.

    The file is a temporary one beside `path` (mode 0600 from its first byte; its `name` is
    its path, ending in `suffix`). When the block ends it is fsynced, given `mode` (default:
    the mode the file has; for a new one 0600 inside a `.memory/` directory, else 0644) and
    renamed over `path`; if the block raises, it is removed and `path` is left as it was.

    No link is followed: a symlink at `path`, or at any folder between `root` and `path`, is
    `LinkRefused` and left alone. `root` is a folder a user named, taken as given; by default
    the workspace holding the nearest `.memory/` on the way, else `path`'s own folder. Missing
    folders are made (0700 for a private file).
    """
    path = path.absolute()
    top = (root or _default_root(path)).absolute()
    relative = path.parent.relative_to(top)
    new_mode = PRIVATE_FILE_MODE if MEMORY_DIR in path.parent.parts else 0o644
    private = not (new_mode if mode is None else mode) & 0o077
    if private:
        private_dir(top)  # a private file's new directories are private too
    else:
        top.mkdir(parents=True, exist_ok=True)
    dir_fd = open_dir(top, relative, create=PRIVATE_DIR_MODE if private else 0o777)
    try:
        with replace_in(dir_fd, path.name, path, mode=mode, new_mode=new_mode, suffix=suffix) as handle:
            yield handle
    finally:
        os.close(dir_fd)


def _default_root(path: Path) -> Path:
    """The folder holding the last `.memory` among `path`'s folders, else `path`'s folder."""
    parts = path.parent.parts
    if MEMORY_DIR not in parts:
        return path.parent
    return Path(*parts[: len(parts) - 1 - parts[::-1].index(MEMORY_DIR)])


def write_atomically(
    path: Path, content: str | bytes, *, mode: int | None = None, root: Path | None = None
) -> None:
    """Replace `path` whole with `content` (text as UTF-8), as `replacing` does."""
    with replacing(path, mode=mode, root=root) as handle:
        handle.write(content.encode("utf-8") if isinstance(content, str) else content)
