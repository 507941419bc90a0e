"""Settings precedence: flags > environment > .memory/config.toml > defaults; settings are
grouped by concern in code but named flat by users."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_bridge import ConfigError, Settings, load_settings, read_token_file


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
    assert (settings.serve.host, settings.serve.port, settings.stores.entry_store) == (
        "127.0.0.1",
        3106,
        "sqlite",
    )
    assert settings.serve.max_body_bytes == 1_048_576


def test_config_file_overrides_defaults(project: Path) -> None:
    settings = load_settings(project=project)
    assert (settings.serve.port, settings.retention.max_entries_warn) == (4000, 5)


def test_environment_overrides_the_file_and_seed_names_are_aliases(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCTL_PORT", "4001")
    monkeypatch.setenv("MEMORY_MCP_MAX_ENTRIES_WARN", "7")
    settings = load_settings(project=project)
    assert (settings.serve.port, settings.retention.max_entries_warn) == (4001, 7)


def test_flags_override_everything_and_unset_flags_do_not_shadow(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCTL_PORT", "4001")
    assert load_settings(project=project, port=4002).serve.port == 4002
    assert load_settings(project=project, port=None).serve.port == 4001


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


# Every name a user can set, as flag, `MEMCTL_<NAME>` and config.toml key; the groups do not
# show in any of them, so a regrouping that drops or renames one breaks this list.
FLAT_NAMES = [
    "project",
    "entry_store",
    "knowledge_store",
    "scope",
    "slots",
    "dify_api_key",
    "dify_api_key_file",
    "dify_datasets",
    "dify_dataset_prefix",
    "dify_indexing_technique",
    "dify_wait_indexed",
    "embedding_model",
    "model_cache_dir",
    "embedding_url",
    "embedding_endpoint_model",
    "embedding_threads",
    "max_results",
    "search_score_threshold",
    "search_fusion",
    "search_vector_weight",
    "search_rrf_k",
    "search_keyword_candidates",
    "search_dense_candidates",
    "search_ann_threshold",
    "search_feedback_docs",
    "search_feedback_weight",
    "search_second_hop",
    "search_rerank",
    "search_prefix_min",
    "search_recall_weight",
    "search_recall_half_life_days",
    "search_stale_penalty",
    "search_superseded_penalty",
    "recall_stamp_debounce_hours",
    "max_document_chars",
    "absorb_max_file_bytes",
    "absorb_default_dataset",
    "absorb_allow",
    "redact_entries",
    "max_entries_warn",
    "max_versions_per_entry",
    "document_versions_keep",
    "document_versions_thin_after_days",
    "operation_id_ttl_seconds",
    "sweep_interval_seconds",
    "audit_lore_stale_days",
    "consolidate_policies",
    "consolidate_stale_after_months",
    "consolidate_archive_age_days",
    "consolidate_similarity_threshold",
    "consolidate_cluster_top_k",
    "consolidate_refresh_max_per_run",
    "compact_budget_seconds",
    "compact_max_entries",
    "host",
    "port",
    "workers",
    "token_file",
    "auth_token",
    "allowed_hosts",
    "allowed_origins",
    "max_body_bytes",
    "tool_timeout_seconds",
    "log_level",
    "capture_provider",
    "capture_model",
    "capture_base_url",
    "capture_api_key",
    "capture_api_key_file",
    "capture_command",
    "capture_timeout_seconds",
    "capture_retries",
    "capture_max_chars",
    "capture_min_turns",
    "capture_similarity",
    "capture_daily_retention_days",
]


def test_every_setting_keeps_its_flat_name() -> None:
    assert sorted(Settings.flat_fields()) == sorted(FLAT_NAMES)
    groups = [field.annotation for name, field in Settings.model_fields.items() if name != "project"]
    assert sum(len(group.model_fields) for group in groups if group) + 1 == len(FLAT_NAMES)


def test_a_flat_environment_variable_sets_the_grouped_field(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCTL_SEARCH_RERANK", "false")
    monkeypatch.setenv("MEMCTL_EMBEDDING_MODEL", "none")
    monkeypatch.setenv("MEMCTL_MODEL_CACHE_DIR", "/var/cache/m")
    monkeypatch.setenv("MEMCTL_SLOTS", '["a", "b"]')
    monkeypatch.setenv("DIFY_KNOWLEDGE_API_KEY", "dify-key")
    monkeypatch.setenv("MEMORY_LLM_PROVIDER", "openai")
    settings = load_settings(project=project)
    assert settings.search.rerank is False
    assert (settings.embedding.model, settings.embedding.cache_dir) == ("none", Path("/var/cache/m"))
    assert settings.stores.slots == ["a", "b"]
    assert settings.dify_key().get_secret_value() == "dify-key"
    assert settings.capture.provider == "openai"


def test_a_flat_toml_key_sets_the_grouped_field_below_the_environment(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / ".memory" / "config.toml").write_text(
        'search_rerank = false\nembedding_url = "http://127.0.0.1:11434/v1"\nMEMORY_MCP_AUTH_TOKEN = "file"\n'
        'dify_datasets = { knowledge = "ds-1" }\n'
    )
    settings = load_settings(project=project)
    assert (settings.search.rerank, settings.embedding.url) == (False, "http://127.0.0.1:11434/v1")
    assert settings.dify.datasets == {"knowledge": "ds-1"}
    assert settings.bearer_token() is not None and settings.bearer_token().get_secret_value() == "file"  # type: ignore[union-attr]
    monkeypatch.setenv("MEMCTL_SEARCH_RERANK", "true")
    monkeypatch.setenv("MEMCTL_AUTH_TOKEN", "env")  # another name of the same setting still wins
    settings = load_settings(project=project)
    assert settings.search.rerank is True
    assert settings.bearer_token().get_secret_value() == "env"  # type: ignore[union-attr]


def test_a_group_table_in_the_toml_file_works_and_flat_names_beat_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / ".memory" / "config.toml").write_text("[search]\nrerank = false\nrrf_k = 30\n")
    settings = load_settings(project=project)
    assert (settings.search.rerank, settings.search.rrf_k) == (False, 30)
    monkeypatch.setenv("MEMCTL_SEARCH_RRF_K", "40")
    assert load_settings(project=project, search_rerank=True).search.model_dump(
        include={"rerank", "rrf_k"}
    ) == {"rerank": True, "rrf_k": 40}


def test_keywords_use_the_flat_names(tmp_path: Path) -> None:
    settings = Settings(project=tmp_path, search_rerank=False, port=0, dify_indexing_technique="economy")
    assert (settings.search.rerank, settings.serve.port, settings.dify.indexing_technique) == (
        False,
        0,
        "economy",
    )
    assert settings.dify.model_fields_set == {"indexing_technique"}  # what `memctl dify onboard` asks
    assert Settings(project=tmp_path).dify.model_fields_set == set()


def test_unknown_keys_are_refused_by_name(project: Path) -> None:
    (project / ".memory" / "config.toml").write_text("search_rerankk = true\n")
    with pytest.raises(
        ConfigError, match=r"invalid settings: search_rerankk: Extra inputs are not permitted"
    ):
        load_settings(project=project)
    (project / ".memory" / "config.toml").write_text("[search]\nbogus = 1\n")
    with pytest.raises(ConfigError, match=r"invalid settings: search\.bogus: Extra inputs are not permitted"):
        load_settings(project=project)
    with pytest.raises(ConfigError, match=r"invalid settings: rerank: Extra inputs are not permitted"):
        load_settings(project=project.parent, rerank=True)  # a group's own name is not a flat name


def test_invalid_values_name_the_flat_setting(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / ".memory" / "config.toml").write_text("search_rrf_k = 0\n")
    with pytest.raises(ConfigError, match=r"invalid settings: search_rrf_k: Input should be greater than 0$"):
        load_settings(project=project)
    (project / ".memory" / "config.toml").write_text("")
    monkeypatch.setenv("MEMCTL_SEARCH_FUSION", "best")
    with pytest.raises(ConfigError, match=r"invalid settings: search_fusion: Input should be"):
        load_settings(project=project)
    monkeypatch.delenv("MEMCTL_SEARCH_FUSION")
    monkeypatch.setenv("MEMCTL_AUTH_TOKEN", " ")
    with pytest.raises(
        ConfigError, match=r"^auth_token: the environment variable MEMCTL_AUTH_TOKEN is empty"
    ):
        load_settings(project=project)


def test_secrets_never_show_in_repr_or_dumps(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCTL_AUTH_TOKEN", "secret-token-1")
    monkeypatch.setenv("MEMCTL_DIFY_API_KEY", "secret-dify-2")
    monkeypatch.setenv("MEMCTL_CAPTURE_API_KEY", "secret-llm-3")
    settings = load_settings(project=project)
    shown = [repr(settings), str(settings), repr(settings.serve), str(settings.model_dump())]
    shown += [settings.model_dump_json(), str(settings.model_dump(mode="json"))]
    assert not [text for text in shown if "secret-" in text]
    assert (
        settings.serve.auth_token is not None
        and settings.serve.auth_token.get_secret_value() == "secret-token-1"
    )
    (project / ".memory" / "config.toml").write_text("port = -1\n")
    with pytest.raises(ConfigError) as refused:
        load_settings(project=project)
    assert "secret-" not in str(refused.value)
