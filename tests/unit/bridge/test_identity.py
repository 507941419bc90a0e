"""Finding a project like git, and pinning its scope in config.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from memory_bridge import ConfigError, find_project, pinned_scope, write_scope


def test_the_nearest_directory_with_memory_is_the_project(tmp_path: Path) -> None:
    (tmp_path / "app" / ".memory").mkdir(parents=True)
    (tmp_path / "app" / "libs" / "inner" / ".memory").mkdir(parents=True)
    (tmp_path / "app" / "src" / "pkg").mkdir(parents=True)
    assert find_project(tmp_path / "app" / "src" / "pkg") == tmp_path / "app"
    assert find_project(tmp_path / "app" / "libs" / "inner") == tmp_path / "app" / "libs" / "inner"
    assert find_project(tmp_path) is None


def test_the_scope_goes_before_the_first_table_and_the_rest_stays(tmp_path: Path) -> None:
    (tmp_path / ".memory").mkdir()
    config = tmp_path / ".memory" / "config.toml"
    config.write_text('# mine\nknowledge_store = "sqlite"\n\n[dify_datasets]\nknowledge = "id-1"\n')
    write_scope(tmp_path, 'app "one"')
    assert config.read_text() == (
        'scope = "app \\"one\\""\n# mine\nknowledge_store = "sqlite"\n\n[dify_datasets]\nknowledge = "id-1"\n'
    )
    assert pinned_scope(tmp_path) == 'app "one"'
    write_scope(tmp_path, "app")
    assert tomllib.loads(config.read_text()) == {
        "scope": "app",
        "knowledge_store": "sqlite",
        "dify_datasets": {"knowledge": "id-1"},
    }
    assert config.stat().st_mode & 0o777 == 0o600


def test_an_empty_scope_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".memory").mkdir()
    with pytest.raises(ConfigError, match="cannot be empty"):
        write_scope(tmp_path, "  ")
    assert pinned_scope(tmp_path) is None
