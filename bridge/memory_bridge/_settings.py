"""The one settings model, shared by the bridge, memctl and rendered files.

Precedence, highest first: command-line flags (passed to `load_settings`), the
environment (`MEMCTL_*`, plus memory-mcp's names as aliases), the project's
`.memory/config.toml`, then the defaults below. Nothing else reads the environment.
"""

from __future__ import annotations

import os
import re
import stat
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from ._errors import ConfigError
from ._files import MEMORY_DIR

__all__ = ["MEMORY_DIR", "Settings", "find_project", "load_settings", "read_token_file"]

_BLANK = "is empty or only whitespace"
_toml_file: ContextVar[Path | None] = ContextVar("_toml_file", default=None)


def _aliases(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class Settings(BaseSettings):
    """Every tunable of memctl and its bridge."""

    model_config = SettingsConfigDict(
        env_prefix="MEMCTL_", extra="forbid", populate_by_name=True, validate_default=True
    )

    project: Path = Field(
        default_factory=Path.cwd, description="The project directory whose memory is served."
    )
    entry_store: str = Field(
        "sqlite",
        description="Entry store URL: `sqlite` (the project's .memory/), `sqlite:///path`, "
        "`valkey://[user:pass@]host:port/db[?prefix=p]`, `valkeys://...` (TLS), `valkey+cluster://h:p,h:p`.",
    )
    knowledge_store: str = Field(
        "sqlite",
        description="Knowledge store URL: `sqlite` (the project's .memory/), `sqlite:///path`, "
        "`dify+https://host/v1` or `dify+http://host/v1`.",
    )
    dify_api_key: SecretStr | None = Field(
        None,
        validation_alias=_aliases("dify_api_key", "MEMCTL_DIFY_API_KEY", "DIFY_KNOWLEDGE_API_KEY"),
        description="Dify dataset API key (prefer dify_api_key_file).",
    )
    dify_api_key_file: Path | None = Field(
        None, description="File (mode 0600) holding the Dify dataset API key."
    )
    dify_datasets: dict[str, str] = Field(
        default_factory=dict,
        description="Slot name -> Dify dataset id (also from DIFY_DATASET_<NAME>_ID); "
        "unbound slots are found by name.",
    )
    dify_dataset_prefix: str = Field(
        "", max_length=20, description="Prefix of the Dify dataset names memctl creates."
    )
    dify_indexing_technique: Literal["high_quality", "economy"] = Field(
        "high_quality", description="Technique of datasets memctl creates (economy: keyword search only)."
    )
    dify_wait_indexed: bool = Field(False, description="Let saves wait until Dify has indexed the document.")
    scope: str = Field(
        "",
        description="The project's name in knowledge memory, written on every document and used to filter "
        "searches (default: the project directory's name).",
    )
    slots: list[str] = Field(
        default_factory=lambda: ["daily", "knowledge", "plans", "investigations", "self_improvement"],
        description="Knowledge slots created on first use.",
    )
    embedding_model: Literal["minilm", "minilm-float", "none"] = Field(
        "minilm",
        description="Dense retrieval: `minilm` (all-MiniLM-L6-v2, bundled, CPU, int8 kernels: the converted "
        "model is built on first use and cached), `minilm-float` (the same model on float32 kernels, half as "
        "fast, no conversion) or `none` (keywords only). Changing it re-embeds stored knowledge.",
    )
    model_cache_dir: Path | None = Field(
        None,
        description="Where the int8 model and the tools' listing (answered at start-up without building "
        "the tools) are cached (default: `$XDG_CACHE_HOME/memctl`, else `~/.cache/memctl`).",
    )
    embedding_url: str | None = Field(
        None,
        description="OpenAI-compatible embeddings endpoint (e.g. http://127.0.0.1:11434/v1) used instead of "
        "the bundled model.",
    )
    embedding_endpoint_model: str = Field("nomic-embed-text", description="Model name sent to embedding_url.")
    embedding_threads: int = Field(
        2, gt=0, le=64, description="Texts the bundled model embeds at once, one CPU thread each."
    )
    max_results: int = Field(8, gt=0, le=50, description="Default number of search_memory records.")
    search_score_threshold: float = Field(
        0.56,
        ge=0.0,
        le=1.0,
        description="Least calibrated relevance (0..1) a knowledge hit needs to be returned by "
        "search_memory, memctl search and the web view when no scoreThreshold is given; below it a "
        "search says nothing matched (bestEffort / --best-effort shows the closest hits anyway, "
        'marked). Measured in bench/README.md ("Search that says nothing found"); higher: fewer wrong '
        "hits, more missed answers.",
    )
    search_fusion: Literal["adaptive", "weighted", "rrf"] = Field(
        "adaptive",
        description="How the embedded knowledge store fuses its two rankings in hybrid search: `weighted` "
        "(search_vector_weight x cosine + the rest x BM25 relative to the best keyword hit), `adaptive` "
        "(`weighted` with a vector share that follows the query's best cosine: 0.9 when no passage is "
        "close to the query, 0.5 when one is; search_vector_weight is not used; tuned for the bundled "
        "model, so with embedding_url it is `weighted`) or `rrf` "
        "(reciprocal-rank fusion with the weights of `weighted`, search_rrf_k).",
    )
    search_vector_weight: float = Field(
        0.7,
        ge=0.0,
        le=1.0,
        description="Share of the dense (vector) side in hybrid search with search_fusion `weighted` or "
        "`rrf`; keywords get the rest.",
    )
    search_rrf_k: int = Field(60, gt=0, le=1000, description="The rank offset of reciprocal-rank fusion.")
    search_keyword_candidates: int = Field(
        200, ge=10, le=10_000, description="Passages the keyword side of a knowledge search ranks."
    )
    search_dense_candidates: int = Field(
        500, ge=10, le=100_000, description="Passages the dense side of a knowledge search ranks."
    )
    search_ann_threshold: int = Field(
        100_000,
        ge=0,
        description="Passage vectors from which the embedded knowledge store searches an approximate "
        "(HNSW) index kept in knowledge.ann beside knowledge.db instead of every vector; its candidates "
        "are rescored exactly, so scores stay those of exact search. 0: always exact.",
    )
    search_feedback_docs: int = Field(
        0,
        ge=0,
        le=10,
        description="Pseudo-relevance feedback: the words of this many best hits are added to the query for "
        "a second keyword round (finds the other half of a two-part answer); 0 turns it off.",
    )
    search_feedback_weight: float = Field(
        0.2, ge=0.0, le=1.0, description="The second keyword round's share in a hit's score."
    )
    search_second_hop: bool = Field(
        True,
        description="Hybrid search in the embedded knowledge store takes a second hop from its best hit: "
        "documents naming a name from it that the question does not say (a person, pet or city), scored "
        "against the question's words the best hit does not match, go in at ranks 2, 3, 5 and 7 (finds "
        "the other turn of a two-part answer; docs/knowledge.md).",
    )
    search_rerank: bool = Field(
        True,
        description="Hybrid search in the embedded knowledge store re-orders the head of its two rankings "
        "with a small fitted model (no model call): a paraphrased answer the dense side finds is not "
        "buried under passages that share only a common word, such as a speaker's name, with the "
        'question (docs/knowledge.md; measured in bench/README.md, "A second stage for hybrid search").',
    )
    search_prefix_min: int = Field(
        3,
        ge=0,
        le=32,
        description="Query words at least this long also match longer words that start with them "
        "(`rotat` finds `rotation`); 0 matches whole words only. The index is stemmed either way "
        "(`beds` finds `bed`).",
    )
    search_recall_weight: float = Field(
        0.05,
        ge=0,
        le=1,
        description="search_memory and recall_lessons add up to this to the score of a document that "
        "searches returned recently and often: weight x count / (count + 1) x 0.5 ^ (days since the last "
        "recall / search_recall_half_life_days). 0: recalls do not change the order.",
    )
    search_recall_half_life_days: float = Field(
        30.0, gt=0, description="After this many days a recall counts half as much in ranking."
    )
    search_stale_penalty: float = Field(
        0.02,
        ge=0,
        le=1,
        description="Subtracted from the score of a lesson, bug-root-cause, feedback-rule or pattern-gotcha "
        "neither recalled nor changed in consolidate_stale_after_months.",
    )
    search_superseded_penalty: float = Field(
        0.1,
        ge=0,
        le=1,
        description="Subtracted from the score of a lesson when a newer lesson with the same lesson key "
        "(project_module, task_type, error_pattern) is in the same result; it always ranks below that one.",
    )
    max_document_chars: int = Field(
        500_000,
        gt=0,
        description="Longest knowledge document a save accepts, in characters (counted before redaction); a "
        "longer one is refused with an error naming both sizes, and nothing is stored. The tools' schemas "
        "stop save_to_dataset at 500,000 and write_memory at 200,000 whatever this says.",
    )
    absorb_max_file_bytes: int = Field(500_000, gt=0, description="Largest file absorb_files reads.")
    absorb_default_dataset: str = Field("knowledge", description="Slot absorb_files writes to by default.")
    absorb_allow: list[str] = Field(
        default_factory=list,
        description="Workspace globs (e.g. `config/dev.env`, `certs/*.pem`) that absorb_files and "
        "scan_documents take although they look private: git-ignored files and well-known secret "
        "files (.env*, keys, credential files). memctl's .memory/ and .git/ are refused regardless.",
    )
    audit_lore_stale_days: int = Field(90, gt=0, description="Age at which audit_memory flags project-lore.")
    consolidate_policies: dict[str, str] = Field(
        default_factory=dict,
        description="Slot name -> consolidate policy, `refine` (maintained) or `none` (left alone), over "
        "the built-in defaults (knowledge, self_improvement: refine; plans, investigations, daily: none). "
        "Every other slot must be declared: consolidate_memory refuses while a slot has no policy or an "
        "invalid one.",
    )
    consolidate_stale_after_months: float = Field(
        6.0,
        gt=0,
        description="consolidate_memory counts a lesson, bug-root-cause, feedback-rule or pattern-gotcha "
        "stale when it was neither recalled, created nor updated in this many months (of 30.4375 days).",
    )
    consolidate_archive_age_days: float = Field(
        180.0,
        gt=0,
        description="consolidate_memory counts a disabled document unchanged this many days as a candidate "
        "for compression.",
    )
    compact_budget_seconds: float = Field(
        120.0,
        ge=0,
        description="Time `memctl maintain`'s compact-entries step may take before it stops writing "
        "(`--compact-budget` overrides it); what it wrote stays and the next run goes on.",
    )
    compact_max_entries: int = Field(
        100_000,
        ge=1,
        description="Entries compact-entries reads at most; a store holding more is reported "
        "`truncated` and nothing is written.",
    )
    consolidate_similarity_threshold: float = Field(
        0.92,
        gt=0,
        le=1,
        description="`memctl maintain`'s llm-merge-near-duplicates asks the capture LLM about two enabled "
        "documents of one slot and type whose cosine similarity (dense search with the text) is at least "
        "this.",
    )
    consolidate_cluster_top_k: int = Field(
        5,
        ge=1,
        le=50,
        description="Nearest neighbours `memctl maintain`'s LLM passes look at per document (near-duplicate "
        "candidates, and the context a stale document is refreshed with).",
    )
    consolidate_refresh_max_per_run: int = Field(
        25,
        ge=0,
        description="Stale documents `memctl maintain`'s llm-semantic-refresh asks the capture LLM about in "
        "one run, per refine slot (recalled last first).",
    )
    recall_stamp_debounce_hours: float = Field(
        24.0,
        ge=0,
        description="After search_memory or recall_lessons returns a knowledge document, its "
        "`last_recalled_at` and `recall_count` are updated in the background, at most once per document "
        "in this many hours (0: on every recall).",
    )
    host: str = Field("127.0.0.1", description="Address the HTTP bridge binds.")
    port: int = Field(3106, ge=0, le=65535, description="Port of the HTTP bridge (0 picks a free one).")
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="Processes serving the HTTP bridge on one port. Above 1, MCP over HTTP is "
        "stateless (any worker answers any request) and each worker's /metrics counts its own calls.",
    )
    token_file: Path | None = Field(
        None, description="File holding the bearer token (mode 0600); an empty file is a start-up error."
    )
    auth_token: SecretStr | None = Field(
        None,
        validation_alias=_aliases("auth_token", "MEMCTL_AUTH_TOKEN", "MEMORY_MCP_AUTH_TOKEN"),
        description="Bearer token given directly (prefer token_file). An empty or blank value (e.g. a "
        "compose file's unset `${VAR}`) is a start-up error naming where it came from, never auth off.",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host headers accepted besides loopback ones, e.g. `mem.example:*`.",
    )
    allowed_origins: list[str] = Field(
        default_factory=list, description="Origin headers accepted besides loopback ones."
    )
    max_body_bytes: int = Field(
        1_048_576,
        gt=0,
        validation_alias=_aliases("max_body_bytes", "MEMCTL_MAX_BODY_BYTES", "MAX_BODY_BYTES"),
        description="Largest accepted HTTP request body.",
    )
    max_entries_warn: int = Field(
        1000,
        gt=0,
        validation_alias=_aliases(
            "max_entries_warn", "MEMCTL_MAX_ENTRIES_WARN", "MEMORY_MCP_MAX_ENTRIES_WARN"
        ),
        description="Soft cap: memory_set warns above this many entries.",
    )
    max_versions_per_entry: int = Field(
        20,
        gt=0,
        validation_alias=_aliases(
            "max_versions_per_entry", "MEMCTL_MAX_VERSIONS_PER_ENTRY", "MEMORY_MCP_MAX_VERSIONS_PER_ENTRY"
        ),
        description="History kept per entry.",
    )
    document_versions_keep: int = Field(
        0,
        ge=0,
        description="Versions kept per knowledge document, newest first (0: every version). The newest is "
        "always kept, a deletion included.",
    )
    document_versions_thin_after_days: int = Field(
        0,
        ge=0,
        description="`memctl maintain` keeps one version a day (the day's last) of knowledge documents' "
        "versions older than this many days, and every deletion; the newest version is always kept "
        "(0: never thin).",
    )
    operation_id_ttl_seconds: int = Field(
        604_800,
        gt=0,
        validation_alias=_aliases(
            "operation_id_ttl_seconds",
            "MEMCTL_OPERATION_ID_TTL_SECONDS",
            "MEMORY_MCP_OPERATION_ID_TTL_SECONDS",
        ),
        description="How long an operation_id is remembered for replay.",
    )
    redact_entries: bool = Field(
        True,
        description="Redact secrets from every field of an entry (title, body, type, tags, source, "
        "project) before it is stored, restored or migrated, as knowledge always is. `false` stores "
        "entries verbatim, as memory-mcp does: anyone who can read the store or a backup reads them, "
        "and the bridge warns about it at every start.",
    )
    sweep_interval_seconds: float = Field(60.0, gt=0, description="How often expired entries are swept.")
    tool_timeout_seconds: float = Field(
        120.0, gt=0, description="Deadline of one tool call; past it the call answers a timeout error."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "WARNING", description="Bridge log level."
    )
    capture_provider: Literal["none", "claude", "codex", "anthropic", "openai"] = Field(
        "none",
        validation_alias=_aliases("capture_provider", "MEMCTL_CAPTURE_PROVIDER", "MEMORY_LLM_PROVIDER"),
        description="LLM that distils sessions and judges compile merges: the `claude` or `codex` CLI, "
        "the Anthropic API, or an OpenAI-compatible API (`openai`, with capture_base_url for Ollama, "
        "LM Studio, vLLM); `none` skips capture.",
    )
    capture_model: str = Field(
        "",
        description="Model for the capture LLM (default: the CLI's own; claude-sonnet-4-6 for anthropic, "
        "gpt-4o-mini for openai).",
    )
    capture_base_url: str | None = Field(
        None,
        description="Base URL of the capture API, e.g. http://127.0.0.1:11434/v1 for Ollama "
        "(default: the provider's public endpoint).",
    )
    capture_api_key: SecretStr | None = Field(
        None, description="API key of the capture API given directly (prefer capture_api_key_file)."
    )
    capture_api_key_file: Path | None = Field(
        None, description="File (mode 0600) holding the API key of the capture API."
    )
    capture_command: str | None = Field(
        None, description="The CLI to run for `claude` or `codex` (default: that name, found on PATH)."
    )
    capture_timeout_seconds: float = Field(
        120.0, gt=0, le=3600, description="How long one LLM call may take before it is stopped."
    )
    capture_retries: int = Field(
        1, ge=0, le=5, description="Extra LLM attempts after an invalid answer or an unreachable provider."
    )
    capture_max_chars: int = Field(
        80_000, gt=0, description="Most transcript characters sent in one flush (the newest are kept)."
    )
    capture_min_turns: int = Field(1, gt=0, description="Fewest new turns worth a flush.")
    capture_similarity: float = Field(
        0.8,
        gt=0,
        le=1,
        description="Embedding similarity at which compile treats an atom as a near-duplicate.",
    )
    capture_daily_retention_days: int = Field(
        7, gt=0, description="Days a compiled daily document stays enabled before compile disables it."
    )

    @field_validator("auth_token", "token_file", mode="before")
    @classmethod
    def _not_blank(cls, value: Any) -> Any:
        """An empty token (an unset compose variable, `auth_token = ""`) must never switch auth on."""
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if isinstance(text, str) and not text.strip():
            raise ValueError(_BLANK)
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml_file = _toml_file.get()
        if toml_file is not None and toml_file.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)

    @property
    def memory_dir(self) -> Path:
        return self.project / MEMORY_DIR

    @property
    def model_cache(self) -> Path:
        """model_cache_dir, or the user's cache directory's `memctl` folder."""
        if self.model_cache_dir is not None:
            return self.model_cache_dir.expanduser()
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memctl"

    @property
    def project_scope(self) -> str:
        return self.scope or self.project.name or "default"

    def dify_key(self) -> SecretStr:
        """The Dify dataset API key, from its file or the environment."""
        if self.dify_api_key_file is not None:
            return read_token_file(self.dify_api_key_file)
        if self.dify_api_key is None:
            raise ConfigError(
                "a Dify knowledge store needs an API key: set dify_api_key_file or MEMCTL_DIFY_API_KEY"
            )
        return self.dify_api_key

    def bearer_token(self) -> SecretStr | None:
        """The token from token_file, else auth_token, else None (auth off)."""
        if self.token_file is not None:
            return read_token_file(self.token_file)
        return self.auth_token


def read_token_file(path: Path) -> SecretStr:
    """Read a bearer token, refusing a file others can read or an empty one."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"token file {path}: cannot read it ({exc.strerror})") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"token file {path}: readable by others (mode {stat.S_IMODE(mode):o}); run chmod 600 on it"
        )
    if not text:
        raise ConfigError(f"token file {path}: is empty")
    return SecretStr(text)


def find_project(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds a `.memory/` directory (as git
    finds `.git`)."""
    start = start.expanduser().absolute()
    for candidate in (start, *start.parents):
        if (candidate / MEMORY_DIR).is_dir():
            return candidate
    return None


def _project_of(flags: dict[str, Any]) -> Path:
    """--project, else MEMCTL_PROJECT, else the nearest project at or above the current
    directory, else the current directory itself."""
    value = flags.get("project") or os.environ.get("MEMCTL_PROJECT")
    if value:
        return Path(value).expanduser().resolve()
    cwd = Path.cwd()
    return (find_project(cwd) or cwd).resolve()


def _env_names(field: str) -> list[str]:
    alias = Settings.model_fields[field].validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    return [f"MEMCTL_{field}"]


def _origin(field: str, given: dict[str, Any], toml_file: Path) -> str:
    """Where `field`'s value came from, in precedence order, for an error message."""
    if field in given:
        return f"the {field} flag"
    upper = {name.upper(): name for name in os.environ}
    for name in _env_names(field):
        if name.upper() in upper:
            return f"the environment variable {upper[name.upper()]}"
    return f"{toml_file} (key {field})"


def _blank_token_error(exc: ValidationError, given: dict[str, Any], toml_file: Path) -> ConfigError | None:
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else ""
        if _BLANK in err["msg"] and field in Settings.model_fields:
            return ConfigError(
                f"{field}: {_origin(field, given, toml_file)} {_BLANK}, which would let any request in; "
                "give a real token (memctl token rotate writes one) or remove the setting"
            )
    return None


def load_settings(**flags: Any) -> Settings:
    """Build the settings; `flags` holds only the options the user actually gave."""
    given = {key: value for key, value in flags.items() if value is not None}
    bound = {
        match.group(1).lower(): value
        for name, value in os.environ.items()
        if (match := re.fullmatch(r"DIFY_DATASET_(.+)_ID", name)) and value
    }
    if bound:
        given["dify_datasets"] = {**bound, **given.get("dify_datasets", {})}
    project = _project_of(given)
    given["project"] = project
    toml_file = project / MEMORY_DIR / "config.toml"
    token = _toml_file.set(toml_file)
    try:
        return Settings(**given)
    except ValidationError as exc:
        blank = _blank_token_error(exc, given, toml_file)
        if blank is not None:
            raise blank from exc
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"invalid settings: {problems}") from exc
    finally:
        _toml_file.reset(token)
