"""Unit test of `_workspace_root`: `/` and the home directory are never a workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_bridge import ConfigError, check_workspace


def test_the_root_is_refused_saying_what_to_do() -> None:
    with pytest.raises(ConfigError, match=r"whole file system.*--project"):
        check_workspace(Path("/"))


def test_the_home_directory_is_refused_also_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "link").symlink_to(home)
    monkeypatch.setenv("HOME", str(home))
    for spelled in (home, Path("~"), tmp_path / "link", home / "src" / ".."):
        with pytest.raises(ConfigError, match="home directory"):
            check_workspace(spelled)
    check_workspace(home / "src")
