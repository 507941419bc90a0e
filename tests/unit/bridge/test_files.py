"""Replacing a file whole: the new content or the old, never a part, and no temporary left."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_bridge import replacing, write_atomically


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
