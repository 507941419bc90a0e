"""Writing beneath a directory without following a link someone planted there.

A folder the user names (the root) is taken as given; below it every folder is opened one
component at a time with O_NOFOLLOW relative to its parent's descriptor, and a file is
replaced by a temporary file made in that folder (O_EXCL|O_NOFOLLOW, mode set with fchmod)
and renamed over it with both names relative to the same descriptor. No path that could be
a link is ever opened, chmodded or written through: a link found where memctl would write
is refused with `LinkRefused` and left alone. A link swapped in after the check is replaced
by the rename itself (a rename never follows its target), so its target stays untouched.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path, PurePath
from typing import IO, Literal

from ._errors import LinkRefused

__all__ = ["open_beneath", "open_dir", "remove_beneath", "replace_in", "set_mode"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_HERE = PurePath()


def _refuse_if_link(name: str, dir_fd: int, where: Path) -> None:
    """Raise `LinkRefused` for `where` when `name` in the folder `dir_fd` is a symlink."""
    try:
        info = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise LinkRefused(where)


def _is_file(name: str, dir_fd: int) -> bool:
    """Whether `name` is there and neither a folder nor a link."""
    try:
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
    except FileNotFoundError:
        return False
    return not stat.S_ISDIR(mode) and not stat.S_ISLNK(mode)


def open_dir(root: Path, relative: PurePath = _HERE, *, create: int | None = None) -> int:
    """A descriptor of the folder `root / relative`, opened without following a link below
    `root`. Missing folders are made with mode `create` (a private mode is set exactly, a
    shared one narrowed by the umask); with `create` None a missing one is FileNotFoundError."""
    if relative.is_absolute() or any(part in ("", ".", "..") for part in relative.parts):
        raise ValueError(f"{relative}: not a plain relative path")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    where = root
    try:
        for name in relative.parts:
            where = where / name
            made = False
            if create is not None:
                try:
                    os.mkdir(name, create, dir_fd=fd)
                    made = True
                except FileExistsError:
                    pass  # there already (a folder, or a link refused below)
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                _refuse_if_link(name, fd, where)
                if exc.errno == errno.ENOTDIR and not _is_file(name, fd):
                    raise LinkRefused(where) from None  # a link when opened, swapped back since
                raise
            os.close(fd)
            fd = child
            if made and create is not None and not create & 0o077:
                os.fchmod(fd, create)  # a umask such as 0277 narrows mkdir's mode
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def replace_in(
    dir_fd: int, name: str, where: Path, *, mode: int | None, new_mode: int, suffix: str = ".tmp"
) -> Iterator[IO[bytes]]:
    """Replace the file `name` in the folder `dir_fd` (`where` is its path, for messages and
    the handle's `name`) with what the block writes. The file gets `mode`, else the mode it
    has, else `new_mode`; a link in its place is `LinkRefused`, checked before and after the
    block. If the block raises, the temporary file is removed and the old file stays."""
    _refuse_if_link(name, dir_fd, where)
    if mode is None:
        try:
            mode = stat.S_IMODE(os.lstat(name, dir_fd=dir_fd).st_mode)
        except FileNotFoundError:
            mode = new_mode
    temp = f".{name}.{secrets.token_hex(4)}{suffix}"
    fd = os.open(temp, _NEW_FILE, 0o600, dir_fd=dir_fd)
    try:
        raw = io.FileIO(fd, "wb")
        raw.name = str(where.parent / temp)  # where the bytes are, for readers
        with io.BufferedWriter(raw) as handle:
            yield handle
            handle.flush()
            os.fsync(fd)
            os.fchmod(fd, mode)
        _refuse_if_link(name, dir_fd, where)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def open_beneath(root: Path, relative: PurePath, flags: int, mode: int = 0o600) -> int:
    """A descriptor of the file `root / relative` opened with `flags`, following no link below
    `root`: a linked folder or file on the way is `LinkRefused`."""
    dir_fd = open_dir(root, relative.parent)
    try:
        return os.open(relative.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError:
        _refuse_if_link(relative.name, dir_fd, root / relative)
        raise
    finally:
        os.close(dir_fd)


def remove_beneath(root: Path, relative: PurePath, *, sha256: str) -> Literal["removed", "gone", "changed"]:
    """Remove the file `root / relative` if its bytes still hash to `sha256` (as memctl wrote
    it), then each folder between it and `root` that this left empty. No link below `root`
    is followed or removed: a link in the file's place or a folder's is `LinkRefused`.
    "gone" when there is no such file, "changed" when it is not the file written (other
    bytes, or not a regular file): either way nothing is removed."""
    try:
        dir_fd = open_dir(root, relative.parent)
    except (FileNotFoundError, NotADirectoryError):
        return "gone"
    try:
        try:
            fd = os.open(
                relative.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
            )
        except FileNotFoundError:
            return "gone"
        except OSError:
            _refuse_if_link(relative.name, dir_fd, root / relative)
            raise
        with open(fd, "rb") as handle:
            opened = os.fstat(handle.fileno())
            if not stat.S_ISREG(opened.st_mode) or hashlib.sha256(handle.read()).hexdigest() != sha256:
                return "changed"
        _refuse_if_link(relative.name, dir_fd, root / relative)
        if os.lstat(relative.name, dir_fd=dir_fd).st_ino != opened.st_ino:
            return "changed"  # another file put in its place since it was read
        os.unlink(relative.name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    _remove_empty_folders(root, relative.parent)
    return "removed"


def _remove_empty_folders(root: Path, relative: PurePath) -> None:
    """Remove `root / relative` and then each parent below `root` while it is empty (rmdir
    never follows a link, and fails on a folder that holds anything)."""
    parts = relative.parts
    for depth in range(len(parts), 0, -1):
        try:
            parent_fd = open_dir(root, PurePath(*parts[: depth - 1]))
        except (OSError, LinkRefused):
            return
        try:
            os.rmdir(parts[depth - 1], dir_fd=parent_fd)
        except OSError:
            return
        finally:
            os.close(parent_fd)


def set_mode(path: Path, mode: int) -> None:
    """chmod `path` (a file or a folder) through a descriptor opened without following a
    link: a link at `path` is `LinkRefused` and keeps its target's mode."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkRefused(path) from None
        raise
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
