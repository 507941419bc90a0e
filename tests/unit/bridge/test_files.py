"""Replacing a file whole: the new content or the old, never a part, and no temporary left."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_bridge import LinkRefused, private_file, replacing, write_atomically


def test_a_failed_write_leaves_the_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "config.yml"
    path.write_text("old\n")
    path.chmod(0o640)
    with pytest.raises(RuntimeError), replacing(path, suffix=".yml") as handle:
        handle.write(b"half")
        assert handle.name.endswith(".yml") and Path(handle.name).parent == tmp_path
        raise RuntimeError("interrupted")
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["config.yml"]
    write_atomically(path, b"new\n")
    assert path.read_bytes() == b"new\n" and path.stat().st_mode & 0o777 == 0o640, "keeps its mode"


def test_a_private_file_gets_private_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "token"
    write_atomically(path, "t\n", mode=0o600)
    assert path.stat().st_mode & 0o777 == 0o600
    assert all((tmp_path / d).stat().st_mode & 0o777 == 0o700 for d in ("a", "a/b"))


def test_a_link_in_the_place_of_the_file_is_left_alone(tmp_path: Path) -> None:
    """Issue 32: replacing no longer writes through a link (it used to replace its target)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    victim.chmod(0o640)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "config.yml").symlink_to(victim)
    with pytest.raises(LinkRefused, match=r"config\.yml: is a symbolic link"):
        write_atomically(tmp_path / "ws" / "config.yml", "new\n", mode=0o600)
    assert victim.read_text() == "precious\n" and victim.stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "ws" / "config.yml").is_symlink()


def test_a_linked_folder_under_the_memory_dir_is_left_alone(tmp_path: Path) -> None:
    """A file in a workspace's .memory/ is written from the workspace down: a linked
    .memory/ (or a folder in it) is refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / ".memory").symlink_to(outside)
    with pytest.raises(LinkRefused, match=r"ws/\.memory: is a symbolic link"):
        write_atomically(tmp_path / "ws" / ".memory" / "config.toml", "scope = 'x'\n")
    with pytest.raises(LinkRefused):
        private_file(tmp_path / "ws" / ".memory")
    assert list(outside.iterdir()) == []


def test_private_file_refuses_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "log").symlink_to(victim)
    with pytest.raises(LinkRefused):
        private_file(tmp_path / "log")
    assert victim.read_text() == "precious\n"
