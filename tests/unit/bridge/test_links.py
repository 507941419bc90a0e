"""Writing beneath a folder without following a link (issue 32, finding 2): a link planted
at a file's or a folder's place is refused and left alone, before the write or during it."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path, PurePath

import pytest

from memory_bridge import LinkRefused
from memory_bridge import _links as links


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the tree being written, that no write may reach."""
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text("precious\n")
    path.chmod(0o640)
    return path


def untouched(victim: Path) -> bool:
    folder = victim.parent
    return (
        victim.read_text() == "precious\n"
        and stat.S_IMODE(victim.stat().st_mode) == 0o640
        and [p.name for p in folder.iterdir()] == [victim.name]
    )


def write(root: Path, relative: str, data: bytes = b"new\n") -> None:
    where = PurePath(relative)
    fd = links.open_dir(root, where.parent, create=0o700)
    try:
        with links.replace_in(fd, where.name, root / where, mode=0o600, new_mode=0o600) as handle:
            handle.write(data)
    finally:
        os.close(fd)


def test_a_linked_folder_below_the_root_is_refused(tmp_path: Path, victim: Path) -> None:
    root = tmp_path / "tree"
    (root / "a").mkdir(parents=True)
    (root / "a" / "b").symlink_to(victim.parent)
    with pytest.raises(LinkRefused) as refused:
        write(root, "a/b/victim.txt")
    assert refused.value.path == root / "a" / "b" and "left alone" in str(refused.value)
    assert untouched(victim) and (root / "a" / "b").is_symlink()


def test_a_linked_file_is_refused_and_no_temporary_is_left(tmp_path: Path, victim: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "f.md").symlink_to(victim)
    with pytest.raises(LinkRefused, match=r"f\.md: is a symbolic link"):
        write(root, "f.md")
    assert untouched(victim) and [p.name for p in root.iterdir()] == ["f.md"]


def test_the_root_itself_is_taken_as_given(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "named").symlink_to(real)
    write(tmp_path / "named", "x/y.md")
    assert (real / "x" / "y.md").read_bytes() == b"new\n"
    assert stat.S_IMODE((real / "x").stat().st_mode) == 0o700


def test_a_path_that_climbs_out_is_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a plain relative path"):
        links.open_dir(tmp_path, PurePath("../x"))


def test_a_link_planted_during_the_write_is_refused(tmp_path: Path, victim: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "f.md").write_text("old\n")
    fd = links.open_dir(root)
    try:
        with (
            pytest.raises(LinkRefused),
            links.replace_in(fd, "f.md", root / "f.md", mode=None, new_mode=0o600) as handle,
        ):
            handle.write(b"new\n")
            (root / "f.md").unlink()
            (root / "f.md").symlink_to(victim)  # swapped in after the first check
    finally:
        os.close(fd)
    assert untouched(victim) and [p.name for p in root.iterdir()] == ["f.md"]


def test_a_link_planted_right_before_the_rename_is_replaced_not_followed(
    tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    rename = os.replace

    def plant_then_rename(src: str, dst: str, **fds: int) -> None:
        (root / dst).unlink(missing_ok=True)
        (root / dst).symlink_to(victim)  # after every check: only the rename is left
        rename(src, dst, **fds)

    monkeypatch.setattr(links.os, "replace", plant_then_rename)
    write(root, "f.md")
    assert untouched(victim)
    assert not (root / "f.md").is_symlink() and (root / "f.md").read_bytes() == b"new\n"


def test_a_folder_swapped_for_a_link_after_it_was_opened_gets_nothing(tmp_path: Path, victim: Path) -> None:
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    fd = links.open_dir(root, PurePath("sub"))
    try:
        (root / "sub").rename(root / "moved")
        (root / "sub").symlink_to(victim.parent)
        with links.replace_in(fd, "f.md", root / "sub" / "f.md", mode=None, new_mode=0o600) as handle:
            handle.write(b"new\n")
    finally:
        os.close(fd)
    assert untouched(victim) and (root / "moved" / "f.md").read_bytes() == b"new\n"


def test_a_link_flipped_in_a_loop_never_reaches_the_victim(tmp_path: Path, victim: Path) -> None:
    """A second thread keeps swapping the file and its folder for links while the writer
    writes them again and again: every write lands in the tree or is refused."""
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    stop = threading.Event()

    def flip() -> None:
        for n in range(20_000):
            if stop.is_set():
                return
            target, link = (root / "sub" / "f.md", victim) if n % 2 else (root / "sub", victim.parent)
            try:
                spare = target.with_name(f"{target.name}.{n}")
                target.rename(spare)
                target.symlink_to(link)
                target.unlink()
                spare.rename(target)
            except OSError:
                continue

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        for _ in range(300):
            try:
                write(root, "sub/f.md")
            except (LinkRefused, FileNotFoundError):  # refused, or the folder away mid-swap
                continue
    finally:
        stop.set()
        flipper.join()
    assert untouched(victim)


def test_set_mode_changes_a_file_or_folder_but_never_a_link_target(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "own").mkdir(mode=0o755)
    links.set_mode(tmp_path / "own", 0o700)
    assert stat.S_IMODE((tmp_path / "own").stat().st_mode) == 0o700
    for planted, target in (("file-link", victim), ("folder-link", victim.parent)):
        (tmp_path / planted).symlink_to(target)
        with pytest.raises(LinkRefused):
            links.set_mode(tmp_path / planted, 0o600)
    assert untouched(victim) and stat.S_IMODE(victim.parent.stat().st_mode) != 0o600


def test_open_beneath_opens_nothing_through_a_linked_folder_or_file(tmp_path: Path, victim: Path) -> None:
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "own.md").write_text("mine\n")
    (root / "linked").symlink_to(victim.parent)
    (root / "sub" / "file-link").symlink_to(victim)
    for relative in ("linked/victim.txt", "sub/file-link"):
        with pytest.raises(LinkRefused):
            os.close(links.open_beneath(root, PurePath(relative), os.O_WRONLY | os.O_APPEND))
    fd = links.open_beneath(root, PurePath("sub/own.md"), os.O_RDONLY)
    with open(fd, encoding="utf-8") as handle:
        assert handle.read() == "mine\n"
    assert untouched(victim)


def test_remove_beneath_removes_only_the_bytes_it_wrote_and_never_through_a_link(
    tmp_path: Path, victim: Path
) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    write(root, "a/b/mine.md", b"as written\n")
    write(root, "a/other.md", b"a person's\n")
    digest = hashlib.sha256(b"as written\n").hexdigest()
    victim_digest = hashlib.sha256(victim.read_bytes()).hexdigest()

    assert links.remove_beneath(root, PurePath("a/other.md"), sha256=digest) == "changed"
    assert links.remove_beneath(root, PurePath("a/missing.md"), sha256=digest) == "gone"
    assert links.remove_beneath(root, PurePath("nowhere/x.md"), sha256=digest) == "gone"
    assert links.remove_beneath(root, PurePath("a/b/mine.md"), sha256=digest) == "removed"
    assert not (root / "a/b").exists() and (root / "a/other.md").read_bytes() == b"a person's\n"

    (root / "a/linked.md").symlink_to(victim)  # the victim's bytes, behind a link
    with pytest.raises(LinkRefused):
        links.remove_beneath(root, PurePath("a/linked.md"), sha256=victim_digest)
    (root / "a/dir").symlink_to(victim.parent)
    with pytest.raises(LinkRefused):
        links.remove_beneath(root, PurePath(f"a/dir/{victim.name}"), sha256=victim_digest)
    assert untouched(victim) and (root / "a/linked.md").is_symlink() and (root / "a/dir").is_symlink()
