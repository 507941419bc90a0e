"""Settings precedence: flags > environment > .memory/config.toml > defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_bridge import ConfigError, load_settings, read_token_file


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in (
        "MEMCTL_PORT",
        "MEMCTL_PROJECT",
        "MEMORY_MCP_MAX_ENTRIES_WARN",
        "MEMCTL_MAX_ENTRIES_WARN",
        "MEMORY_MCP_AUTH_TOKEN",
        "MEMCTL_AUTH_TOKEN",
        "MEMCTL_ENTRY_STORE",
    ):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / ".memory").mkdir()
    (tmp_path / ".memory" / "config.toml").write_text("port = 4000\nmax_entries_warn = 5\n")
    return tmp_path


def test_defaults_apply_without_any_source(tmp_path: Path) -> None:
    settings = load_settings(project=tmp_path)
    assert (settings.host, settings.port, settings.entry_store) == ("127.0.0.1", 3106, "sqlite")
    assert settings.max_body_bytes == 1_048_576


def test_config_file_overrides_defaults(project: Path) -> None:
    settings = load_settings(project=project)
    assert (settings.port, settings.max_entries_warn) == (4000, 5)


def test_environment_overrides_the_file_and_seed_names_are_aliases(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCTL_PORT", "4001")
    monkeypatch.setenv("MEMORY_MCP_MAX_ENTRIES_WARN", "7")
    settings = load_settings(project=project)
    assert (settings.port, settings.max_entries_warn) == (4001, 7)


def test_flags_override_everything_and_unset_flags_do_not_shadow(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCTL_PORT", "4001")
    assert load_settings(project=project, port=4002).port == 4002
    assert load_settings(project=project, port=None).port == 4001


def test_secrets_never_show_in_repr(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_MCP_AUTH_TOKEN", "top-secret-value")
    settings = load_settings(project=project)
    assert settings.bearer_token() is not None
    assert "top-secret-value" not in repr(settings)


def test_unknown_or_invalid_settings_name_the_field(project: Path) -> None:
    (project / ".memory" / "config.toml").write_text("prot = 1\n")
    with pytest.raises(ConfigError, match="prot"):
        load_settings(project=project)
    (project / ".memory" / "config.toml").write_text("port = 70000\n")
    with pytest.raises(ConfigError, match="port"):
        load_settings(project=project)


def test_token_file_must_be_private_and_non_empty(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("  abc \n")
    token.chmod(0o600)
    assert read_token_file(token).get_secret_value() == "abc"
    token.chmod(0o640)
    with pytest.raises(ConfigError, match="chmod 600"):
        read_token_file(token)
    token.write_text("")
    token.chmod(0o600)
    with pytest.raises(ConfigError, match="empty"):
        read_token_file(token)
    with pytest.raises(ConfigError, match="cannot read"):
        read_token_file(tmp_path / "missing")
