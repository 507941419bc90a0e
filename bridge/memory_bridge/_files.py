"""Private files and directories, and replacing a file whole (readers see the old text or
the new, never part of either).

Every directory memctl creates for its own data (stores, tokens, outboxes, logs, caches) is
mode 0700 and every such file 0600 from its first byte, whatever the umask; an existing one
keeps its mode (`memctl doctor` reports one others can read)."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

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
            directory.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue  # made by someone else meanwhile: theirs to set
        os.chmod(directory, PRIVATE_DIR_MODE)  # a umask such as 0277 narrows mkdir's mode
    return path


def private_file(path: Path) -> Path:
    """Create `path` empty, mode 0600, in private directories, unless it exists; `path`."""
    private_dir(path.parent)
    # O_NONBLOCK: a FIFO planted in the file's place fails at once instead of blocking
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK, PRIVATE_FILE_MODE))
    return path


@contextmanager
def replacing(path: Path, *, mode: int | None = None, suffix: str = ".tmp") -> Iterator[IO[bytes]]:
    """Replace `path` whole with what the block writes to the file it is given.

    The file is a temporary one beside `path` (mode 0600 from its first byte; its `name` is
    its path, ending in `suffix`). When the block ends it is fsynced, given `mode` (default:
    the mode the file has; for a new one 0600 inside a `.memory/` directory, else 0644) and
    renamed over `path`; if the block raises, it is removed and `path` is left as it was.
    A symlink is followed, so the file it points to is replaced and the link stays.
    """
    real = path.resolve()
    if mode is not None and not mode & 0o077:
        private_dir(real.parent)  # a private file's new directories are private too
    else:
        real.parent.mkdir(parents=True, exist_ok=True)
    if mode is None and real.exists():
        mode = stat.S_IMODE(real.stat().st_mode)
    elif mode is None:  # new: everything memctl keeps in a project's .memory/ is private
        mode = PRIVATE_FILE_MODE if MEMORY_DIR in real.parent.parts else 0o644
    temp: Path | None = None
    try:
        with tempfile.NamedTemporaryFile(
            dir=real.parent, prefix=f".{real.name}.", suffix=suffix, delete=False
        ) as handle:
            temp = Path(handle.name)
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, real)
    except BaseException:
        if temp is not None:
            temp.unlink(missing_ok=True)
        raise


def write_atomically(path: Path, content: str | bytes, *, mode: int | None = None) -> None:
    """Replace `path` whole with `content` (text as UTF-8), as `replacing` does."""
    with replacing(path, mode=mode) as handle:
        handle.write(content.encode("utf-8") if isinstance(content, str) else content)
