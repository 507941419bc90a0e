"""The one settings model, shared by the bridge, memctl and rendered files.

Precedence, highest first: command-line flags (passed to `load_settings`), the
environment (`MEMCTL_*`, plus memory-mcp's names as aliases), the project's
`.memory/config.toml`, then the defaults below. Nothing else reads the environment.

Code reads a setting by its concern (`settings.search.rerank`); users name it flat, as they
always have: `MEMCTL_SEARCH_RERANK`, `search_rerank = false` in the TOML file, the
`search_rerank` keyword of `load_settings`. A group field's flat name is its validation alias
(the first, when the seeds' names are aliases too), else its own name; `_grouped` sorts flat
input into the groups, and errors name the flat setting again.
"""

from __future__ import annotations

import os
import re
import stat
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from ._errors import ConfigError
from ._files import MEMORY_DIR

__all__ = ["MEMORY_DIR", "Settings", "find_project", "load_settings", "read_token_file"]

_BLANK = "is empty or only whitespace"
_toml_file: ContextVar[Path | None] = ContextVar("_toml_file", default=None)


def _aliases(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class _Group(BaseModel):
    """A group of settings: unknown keys are errors, defaults are validated."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=True)


class StoreSettings(_Group):
    """Where memory lives: the two stores, the project's name in them and its knowledge slots."""

    entry_store: str = Field(
        default="sqlite",
        description="Entry store URL: `sqlite` (the project's .memory/), `sqlite:///path`, "
        "`valkey://[user:pass@]host:port/db[?prefix=p]`, `valkeys://...` (TLS), `valkey+cluster://h:p,h:p`.",
    )

    knowledge_store: str = Field(
        default="sqlite",
        description="Knowledge store URL: `sqlite` (the project's .memory/), `sqlite:///path`, "
        "`dify+https://host/v1` or `dify+http://host/v1`.",
    )

    scope: str = Field(
        default="",
        description="The project's name in knowledge memory, written on every document and used to filter "
        "searches (default: the project directory's name).",
    )

    slots: list[str] = Field(
        default_factory=lambda: ["daily", "knowledge", "plans", "investigations", "self_improvement"],
        description="Knowledge slots created on first use.",
    )


class DifySettings(_Group):
    """A Dify knowledge store: its API key, datasets and how memctl creates them."""

    api_key: SecretStr | None = Field(
        default=None,
        validation_alias=_aliases("dify_api_key", "MEMCTL_DIFY_API_KEY", "DIFY_KNOWLEDGE_API_KEY"),
        description="Dify dataset API key (prefer dify_api_key_file).",
    )

    api_key_file: Path | None = Field(
        default=None,
        description="File (mode 0600) holding the Dify dataset API key.",
        validation_alias="dify_api_key_file",
    )

    datasets: dict[str, str] = Field(
        default_factory=dict,
        validation_alias="dify_datasets",
        description="Slot name -> Dify dataset id (also from DIFY_DATASET_<NAME>_ID); "
        "unbound slots are found by name.",
    )

    dataset_prefix: str = Field(
        default="",
        max_length=20,
        description="Prefix of the Dify dataset names memctl creates.",
        validation_alias="dify_dataset_prefix",
    )

    indexing_technique: Literal["high_quality", "economy"] = Field(
        default="high_quality",
        description="Technique of datasets memctl creates (economy: keyword search only).",
        validation_alias="dify_indexing_technique",
    )

    wait_indexed: bool = Field(
        default=False,
        validation_alias="dify_wait_indexed",
        description="Let saves wait until Dify has indexed the document.",
    )


class EmbeddingSettings(_Group):
    """Dense retrieval: the bundled model or an embeddings endpoint."""

    model: Literal["minilm", "minilm-float", "none"] = Field(
        default="minilm",
        validation_alias="embedding_model",
        description="Dense retrieval: `minilm` (all-MiniLM-L6-v2, bundled, CPU, int8 kernels: the converted "
        "model is built on first use and cached), `minilm-float` (the same model on float32 kernels, half as "
        "fast, no conversion) or `none` (keywords only). Changing it re-embeds stored knowledge.",
    )

    cache_dir: Path | None = Field(
        default=None,
        validation_alias="model_cache_dir",
        description="Where the int8 model and the tools' listing (answered at start-up without building "
        "the tools) are cached (default: `$XDG_CACHE_HOME/memctl`, else `~/.cache/memctl`).",
    )

    url: str | None = Field(
        default=None,
        validation_alias="embedding_url",
        description="OpenAI-compatible embeddings endpoint (e.g. http://127.0.0.1:11434/v1) used instead of "
        "the bundled model.",
    )

    endpoint_model: str = Field(
        default="nomic-embed-text",
        validation_alias="embedding_endpoint_model",
        description="Model name sent to embedding_url.",
    )

    threads: int = Field(
        default=2,
        gt=0,
        le=64,
        description="Texts the bundled model embeds at once, one CPU thread each.",
        validation_alias="embedding_threads",
    )


class SearchSettings(_Group):
    """How searches rank, fuse, cut off and remember what they returned."""

    max_results: int = Field(default=8, gt=0, le=50, description="Default number of search_memory records.")

    score_threshold: float = Field(
        default=0.56,
        validation_alias="search_score_threshold",
        ge=0.0,
        le=1.0,
        description="Least calibrated relevance (0..1) a knowledge hit needs to be returned by "
        "search_memory, memctl search and the web view when no scoreThreshold is given; below it a "
        "search says nothing matched (bestEffort / --best-effort shows the closest hits anyway, "
        'marked). Measured in bench/README.md ("Search that says nothing found"); higher: fewer wrong '
        "hits, more missed answers.",
    )

    fusion: Literal["adaptive", "weighted", "rrf"] = Field(
        default="adaptive",
        validation_alias="search_fusion",
        description="How the embedded knowledge store fuses its two rankings in hybrid search: `weighted` "
        "(search_vector_weight x cosine + the rest x BM25 relative to the best keyword hit), `adaptive` "
        "(`weighted` with a vector share that follows the query's best cosine: 0.9 when no passage is "
        "close to the query, 0.5 when one is; search_vector_weight is not used; tuned for the bundled "
        "model, so with embedding_url it is `weighted`) or `rrf` "
        "(reciprocal-rank fusion with the weights of `weighted`, search_rrf_k).",
    )

    vector_weight: float = Field(
        default=0.7,
        validation_alias="search_vector_weight",
        ge=0.0,
        le=1.0,
        description="Share of the dense (vector) side in hybrid search with search_fusion `weighted` or "
        "`rrf`; keywords get the rest.",
    )

    rrf_k: int = Field(
        default=60,
        validation_alias="search_rrf_k",
        gt=0,
        le=1000,
        description="The rank offset of reciprocal-rank fusion.",
    )

    keyword_candidates: int = Field(
        default=200,
        ge=10,
        le=10_000,
        description="Passages the keyword side of a knowledge search ranks.",
        validation_alias="search_keyword_candidates",
    )

    dense_candidates: int = Field(
        default=500,
        ge=10,
        le=100_000,
        description="Passages the dense side of a knowledge search ranks.",
        validation_alias="search_dense_candidates",
    )

    ann_threshold: int = Field(
        default=100_000,
        validation_alias="search_ann_threshold",
        ge=0,
        description="Passage vectors from which the embedded knowledge store searches an approximate "
        "(HNSW) index kept in knowledge.ann and knowledge.ann.graph beside knowledge.db instead of every "
        "vector; its candidates "
        "are rescored exactly, so scores stay those of exact search. 0: always exact.",
    )

    feedback_docs: int = Field(
        default=0,
        validation_alias="search_feedback_docs",
        ge=0,
        le=10,
        description="Pseudo-relevance feedback: the words of this many best hits are added to the query for "
        "a second keyword round (finds the other half of a two-part answer); 0 turns it off.",
    )

    feedback_weight: float = Field(
        default=0.2,
        ge=0.0,
        le=1.0,
        description="The second keyword round's share in a hit's score.",
        validation_alias="search_feedback_weight",
    )

    second_hop: bool = Field(
        default=True,
        validation_alias="search_second_hop",
        description="Hybrid search in the embedded knowledge store takes a second hop from its best hit: "
        "documents naming a name from it that the question does not say (a person, pet or city), scored "
        "against the question's words the best hit does not match, go in at ranks 2, 3, 5 and 7 (finds "
        "the other turn of a two-part answer; docs/knowledge.md).",
    )

    rerank: bool = Field(
        default=True,
        validation_alias="search_rerank",
        description="Hybrid search in the embedded knowledge store re-orders the head of its two rankings "
        "with a small fitted model (no model call): a paraphrased answer the dense side finds is not "
        "buried under passages that share only a common word, such as a speaker's name, with the "
        'question (docs/knowledge.md; measured in bench/README.md, "A second stage for hybrid search").',
    )

    prefix_min: int = Field(
        default=3,
        validation_alias="search_prefix_min",
        ge=0,
        le=32,
        description="Query words at least this long also match longer words that start with them "
        "(`rotat` finds `rotation`); 0 matches whole words only. The index is stemmed either way "
        "(`beds` finds `bed`).",
    )

    recall_weight: float = Field(
        default=0.05,
        validation_alias="search_recall_weight",
        ge=0,
        le=1,
        description="search_memory and recall_lessons add up to this to the score of a document that "
        "searches returned recently and often: weight x count / (count + 1) x 0.5 ^ (days since the last "
        "recall / search_recall_half_life_days). 0: recalls do not change the order.",
    )

    recall_half_life_days: float = Field(
        default=30.0,
        gt=0,
        description="After this many days a recall counts half as much in ranking.",
        validation_alias="search_recall_half_life_days",
    )

    stale_penalty: float = Field(
        default=0.02,
        validation_alias="search_stale_penalty",
        ge=0,
        le=1,
        description="Subtracted from the score of a lesson, bug-root-cause, feedback-rule or pattern-gotcha "
        "neither recalled nor changed in consolidate_stale_after_months.",
    )

    superseded_penalty: float = Field(
        default=0.1,
        validation_alias="search_superseded_penalty",
        ge=0,
        le=1,
        description="Subtracted from the score of a lesson when a newer lesson with the same lesson key "
        "(project_module, task_type, error_pattern) is in the same result; it always ranks below that one.",
    )

    recall_stamp_debounce_hours: float = Field(
        default=24.0,
        ge=0,
        description="After search_memory or recall_lessons returns a knowledge document, its "
        "`last_recalled_at` and `recall_count` are updated in the background, at most once per document "
        "in this many hours (0: on every recall).",
    )


class IntakeSettings(_Group):
    """What a save or an absorb takes in, and how entries are redacted on the way."""

    max_document_chars: int = Field(
        default=500_000,
        gt=0,
        description="Longest knowledge document a save accepts, in characters (counted before redaction); a "
        "longer one is refused with an error naming both sizes, and nothing is stored. The tools' schemas "
        "stop save_to_dataset at 500,000 and write_memory at 200,000 whatever this says.",
    )

    absorb_max_file_bytes: int = Field(default=500_000, gt=0, description="Largest file absorb_files reads.")

    absorb_default_dataset: str = Field(
        default="knowledge", description="Slot absorb_files writes to by default."
    )

    absorb_allow: list[str] = Field(
        default_factory=list,
        description="Workspace globs (e.g. `config/dev.env`, `certs/*.pem`) that absorb_files and "
        "scan_documents take although they look private: git-ignored files and well-known secret "
        "files (.env*, keys, credential files). memctl's .memory/ and .git/ are refused regardless.",
    )

    redact_entries: bool = Field(
        default=True,
        description="Redact secrets from every field of an entry (title, body, type, tags, source, "
        "project) before it is stored, restored or migrated, as knowledge always is. `false` stores "
        "entries verbatim, as memory-mcp does: anyone who can read the store or a backup reads them, "
        "and the bridge warns about it at every start.",
    )


class RetentionSettings(_Group):
    """How much history is kept and for how long."""

    max_entries_warn: int = Field(
        default=1000,
        gt=0,
        validation_alias=_aliases(
            "max_entries_warn", "MEMCTL_MAX_ENTRIES_WARN", "MEMORY_MCP_MAX_ENTRIES_WARN"
        ),
        description="Soft cap: memory_set warns above this many entries.",
    )

    max_versions_per_entry: int = Field(
        default=20,
        gt=0,
        validation_alias=_aliases(
            "max_versions_per_entry", "MEMCTL_MAX_VERSIONS_PER_ENTRY", "MEMORY_MCP_MAX_VERSIONS_PER_ENTRY"
        ),
        description="History kept per entry.",
    )

    document_versions_keep: int = Field(
        default=0,
        ge=0,
        description="Versions kept per knowledge document, newest first (0: every version). The newest is "
        "always kept, a deletion included.",
    )

    document_versions_thin_after_days: int = Field(
        default=0,
        ge=0,
        description="`memctl maintain` keeps one version a day (the day's last) of knowledge documents' "
        "versions older than this many days, and every deletion; the newest version is always kept "
        "(0: never thin).",
    )

    operation_id_ttl_seconds: int = Field(
        default=604_800,
        gt=0,
        validation_alias=_aliases(
            "operation_id_ttl_seconds",
            "MEMCTL_OPERATION_ID_TTL_SECONDS",
            "MEMORY_MCP_OPERATION_ID_TTL_SECONDS",
        ),
        description="How long an operation_id is remembered for replay.",
    )

    sweep_interval_seconds: float = Field(
        default=60.0, gt=0, description="How often expired entries are swept."
    )


class MaintainSettings(_Group):
    """`memctl maintain` and its passes: audit, consolidate, compact."""

    audit_lore_stale_days: int = Field(
        default=90, gt=0, description="Age at which audit_memory flags project-lore."
    )

    consolidate_policies: dict[str, str] = Field(
        default_factory=dict,
        description="Slot name -> consolidate policy, `refine` (maintained) or `none` (left alone), over "
        "the built-in defaults (knowledge, self_improvement: refine; plans, investigations, daily: none). "
        "Every other slot must be declared: consolidate_memory refuses while a slot has no policy or an "
        "invalid one.",
    )

    consolidate_stale_after_months: float = Field(
        default=6.0,
        gt=0,
        description="consolidate_memory counts a lesson, bug-root-cause, feedback-rule or pattern-gotcha "
        "stale when it was neither recalled, created nor updated in this many months (of 30.4375 days).",
    )

    consolidate_archive_age_days: float = Field(
        default=180.0,
        gt=0,
        description="consolidate_memory counts a disabled document unchanged this many days as a candidate "
        "for compression.",
    )

    consolidate_similarity_threshold: float = Field(
        default=0.92,
        gt=0,
        le=1,
        description="`memctl maintain`'s llm-merge-near-duplicates asks the capture LLM about two enabled "
        "documents of one slot and type whose cosine similarity (dense search with the text) is at least "
        "this.",
    )

    consolidate_cluster_top_k: int = Field(
        default=5,
        ge=1,
        le=50,
        description="Nearest neighbours `memctl maintain`'s LLM passes look at per document (near-duplicate "
        "candidates, and the context a stale document is refreshed with).",
    )

    consolidate_refresh_max_per_run: int = Field(
        default=25,
        ge=0,
        description="Stale documents `memctl maintain`'s llm-semantic-refresh asks the capture LLM about in "
        "one run, per refine slot (recalled last first).",
    )

    compact_budget_seconds: float = Field(
        default=120.0,
        ge=0,
        description="Time `memctl maintain`'s compact-entries step may take before it stops writing "
        "(`--compact-budget` overrides it); what it wrote stays and the next run goes on.",
    )

    compact_max_entries: int = Field(
        default=100_000,
        ge=1,
        description="Entries compact-entries reads at most; a store holding more is reported "
        "`truncated` and nothing is written.",
    )


class ServeSettings(_Group):
    """The bridge as a server: address, workers, auth, accepted requests, deadlines, logging."""

    host: str = Field(default="127.0.0.1", description="Address the HTTP bridge binds.")

    port: int = Field(
        default=3106, ge=0, le=65535, description="Port of the HTTP bridge (0 picks a free one)."
    )

    workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Processes serving the HTTP bridge on one port. Above 1, MCP over HTTP is "
        "stateless (any worker answers any request) and each worker's /metrics counts its own calls.",
    )

    token_file: Path | None = Field(
        default=None,
        description="File holding the bearer token (mode 0600); an empty file is a start-up error.",
    )

    auth_token: SecretStr | None = Field(
        default=None,
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
        default=1_048_576,
        gt=0,
        validation_alias=_aliases("max_body_bytes", "MEMCTL_MAX_BODY_BYTES", "MAX_BODY_BYTES"),
        description="Largest accepted HTTP request body.",
    )

    tool_timeout_seconds: float = Field(
        default=120.0,
        gt=0,
        description="Deadline of one tool call; past it the call answers a timeout error.",
    )

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="WARNING", description="Bridge log level."
    )

    @field_validator("auth_token", "token_file", mode="before")
    @classmethod
    def _not_blank(cls, value: Any) -> Any:
        """An empty token (an unset compose variable, `auth_token = ""`) must never switch auth on."""
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if isinstance(text, str) and not text.strip():
            raise ValueError(_BLANK)
        return value


class CaptureSettings(_Group):
    """The capture LLM that distils sessions, judges compile merges and runs maintain's LLM passes."""

    provider: Literal["none", "claude", "codex", "anthropic", "openai"] = Field(
        default="none",
        validation_alias=_aliases("capture_provider", "MEMCTL_CAPTURE_PROVIDER", "MEMORY_LLM_PROVIDER"),
        description="LLM that distils sessions and judges compile merges: the `claude` or `codex` CLI, "
        "the Anthropic API, or an OpenAI-compatible API (`openai`, with capture_base_url for Ollama, "
        "LM Studio, vLLM); `none` skips capture.",
    )

    model: str = Field(
        default="",
        validation_alias="capture_model",
        description="Model for the capture LLM (default: the CLI's own; claude-sonnet-4-6 for anthropic, "
        "gpt-4o-mini for openai).",
    )

    base_url: str | None = Field(
        default=None,
        validation_alias="capture_base_url",
        description="Base URL of the capture API, e.g. http://127.0.0.1:11434/v1 for Ollama "
        "(default: the provider's public endpoint).",
    )

    api_key: SecretStr | None = Field(
        default=None,
        description="API key of the capture API given directly (prefer capture_api_key_file).",
        validation_alias="capture_api_key",
    )

    api_key_file: Path | None = Field(
        default=None,
        description="File (mode 0600) holding the API key of the capture API.",
        validation_alias="capture_api_key_file",
    )

    command: str | None = Field(
        default=None,
        description="The CLI to run for `claude` or `codex` (default: that name, found on PATH).",
        validation_alias="capture_command",
    )

    timeout_seconds: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        description="How long one LLM call may take before it is stopped.",
        validation_alias="capture_timeout_seconds",
    )

    retries: int = Field(
        default=1,
        ge=0,
        le=5,
        description="Extra LLM attempts after an invalid answer or an unreachable provider.",
        validation_alias="capture_retries",
    )

    max_chars: int = Field(
        default=80_000,
        gt=0,
        description="Most transcript characters sent in one flush (the newest are kept).",
        validation_alias="capture_max_chars",
    )

    min_turns: int = Field(
        default=1, validation_alias="capture_min_turns", gt=0, description="Fewest new turns worth a flush."
    )

    similarity: float = Field(
        default=0.8,
        validation_alias="capture_similarity",
        gt=0,
        le=1,
        description="Embedding similarity at which compile treats an atom as a near-duplicate.",
    )

    daily_retention_days: int = Field(
        default=7,
        gt=0,
        description="Days a compiled daily document stays enabled before compile disables it.",
        validation_alias="capture_daily_retention_days",
    )


class Settings(BaseSettings):
    """Every tunable of memctl and its bridge, grouped by concern."""

    model_config = SettingsConfigDict(
        env_prefix="MEMCTL_", extra="forbid", populate_by_name=True, validate_default=True
    )

    project: Path = Field(
        default_factory=Path.cwd, description="The project directory whose memory is served."
    )
    stores: StoreSettings = Field(default_factory=StoreSettings)
    dify: DifySettings = Field(default_factory=DifySettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    intake: IntakeSettings = Field(default_factory=IntakeSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    maintain: MaintainSettings = Field(default_factory=MaintainSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)
    capture: CaptureSettings = Field(default_factory=CaptureSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, _FlatEnvSource(settings_cls)]
        toml_file = _toml_file.get()
        if toml_file is not None and toml_file.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(_GroupedSource(source) for source in sources)

    @classmethod
    def flat_fields(cls) -> dict[str, tuple[str | None, FieldInfo]]:
        """Every setting by the name users give it (flag, `MEMCTL_<NAME>`, TOML key): its group
        (None for `project`) and its field, in the order of the groups."""
        return {name: (flat.group, flat.info) for name, flat in _FLAT.items()}

    @property
    def memory_dir(self) -> Path:
        return self.project / MEMORY_DIR

    @property
    def model_cache(self) -> Path:
        """model_cache_dir, or the user's cache directory's `memctl` folder."""
        if self.embedding.cache_dir is not None:
            return self.embedding.cache_dir.expanduser()
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memctl"

    @property
    def project_scope(self) -> str:
        return self.stores.scope or self.project.name or "default"

    def dify_key(self) -> SecretStr:
        """The Dify dataset API key, from its file or the environment."""
        if self.dify.api_key_file is not None:
            return read_token_file(self.dify.api_key_file)
        if self.dify.api_key is None:
            raise ConfigError(
                "a Dify knowledge store needs an API key: set dify_api_key_file or MEMCTL_DIFY_API_KEY"
            )
        return self.dify.api_key

    def bearer_token(self) -> SecretStr | None:
        """The token from token_file, else auth_token, else None (auth off)."""
        if self.serve.token_file is not None:
            return read_token_file(self.serve.token_file)
        return self.serve.auth_token


class _Flat(NamedTuple):
    """One setting as users name it: its group (None: a top-level field), field name and field."""

    group: str | None
    field: str
    info: FieldInfo


def _flat_table() -> dict[str, _Flat]:
    """Flat name -> where the setting lives, derived from the groups' fields."""
    table: dict[str, _Flat] = {}
    for group, field in Settings.model_fields.items():
        model = field.annotation
        if not (isinstance(model, type) and issubclass(model, _Group)):
            table[group] = _Flat(None, group, field)
            continue
        for name, info in model.model_fields.items():
            table[_names(name, info)[0]] = _Flat(group, name, info)
    return table


def _names(name: str, info: FieldInfo) -> tuple[str, ...]:
    """A field's flat name, then the other names it accepts (the seeds')."""
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(choice) for choice in alias.choices)
    return (alias,) if isinstance(alias, str) else (name,)


_FLAT = _flat_table()
# Every name a grouped setting accepts, lower-cased as pydantic-settings matches keys.
_KEYS = {
    other.lower(): (where.group, where.field)
    for where in _FLAT.values()
    if where.group is not None
    for other in _names(where.field, where.info)
}
_WHERE = {(where.group, where.field): flat for flat, where in _FLAT.items()}


def _grouped(data: dict[str, Any]) -> dict[str, Any]:
    """One source's input with every flat key (in any case, the seeds' names too) moved into
    its group under the field's own name; a group given as a table (`[search]` in the TOML file)
    is kept, and a flat key beats the table's entry. Unknown keys stay, for `extra="forbid"`."""
    out: dict[str, Any] = {}
    moved: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if (where := _KEYS.get(key.lower())) is None:
            out[key] = value
        else:
            moved.setdefault(where[0], {})[where[1]] = value
    for group, values in moved.items():
        table = out.get(group, {})
        out[group] = {**table, **values} if isinstance(table, dict) else table
    return out


class _GroupedSource(PydanticBaseSettingsSource):
    """A settings source whose flat keys are sorted into the groups, so sources still merge
    setting by setting in precedence order."""

    def __init__(self, source: PydanticBaseSettingsSource) -> None:
        super().__init__(source.settings_cls)
        self._source = source
        self.__name__ = type(source).__name__  # how pydantic-settings names a source in its debug log

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return _grouped(self._source())


def _env_field(where: _Flat) -> FieldInfo:
    """The field as the environment sees it: the seeds' aliases (read as they are), else
    `MEMCTL_` and the flat name."""
    alias = where.info.validation_alias
    return FieldInfo(
        annotation=where.info.annotation,
        validation_alias=alias if isinstance(alias, AliasChoices) else None,
    )


_ENV_FIELDS = {flat: _env_field(where) for flat, where in _FLAT.items()}


class _FlatEnvSource(EnvSettingsSource):
    """The environment, read setting by setting under the flat names (`MEMCTL_PORT`, the
    seeds' `MEMORY_MCP_AUTH_TOKEN`, ...), never a group as a whole."""

    def __call__(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for name, field in _ENV_FIELDS.items():
            value, _, value_is_complex = self.get_field_value(field, name)
            try:
                value = self.prepare_field_value(name, field, value, value_is_complex)
            except ValueError as exc:
                raise SettingsError(
                    f'error parsing value for field "{name}" from source "EnvSettingsSource"'
                ) from exc
            if value is not None:
                data[name] = value
        return data


def _flat_name(loc: tuple[int | str, ...]) -> str:
    """A validation error's location as users name the setting (`search_rerank`, not
    `search.rerank`)."""
    if len(loc) >= 2 and (loc[0], loc[1]) in _WHERE:
        return ".".join([_WHERE[(str(loc[0]), str(loc[1]))], *map(str, loc[2:])])
    return ".".join(map(str, loc))


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


def _origin(flat: str, given: dict[str, Any], toml_file: Path) -> str:
    """Where setting `flat`'s value came from, in precedence order, for an error message."""
    if flat in given:
        return f"the {flat} flag"
    upper = {name.upper(): name for name in os.environ}
    where = _FLAT[flat]
    alias = where.info.validation_alias
    names = [str(c) for c in alias.choices] if isinstance(alias, AliasChoices) else [f"MEMCTL_{flat}"]
    for name in names:
        if name.upper() in upper:
            return f"the environment variable {upper[name.upper()]}"
    return f"{toml_file} (key {flat})"


def _blank_token_error(exc: ValidationError, given: dict[str, Any], toml_file: Path) -> ConfigError | None:
    for err in exc.errors():
        flat = _flat_name(err["loc"])
        if _BLANK in err["msg"] and flat in _FLAT:
            return ConfigError(
                f"{flat}: {_origin(flat, given, toml_file)} {_BLANK}, which would let any request in; "
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
        problems = "; ".join(f"{_flat_name(err['loc']) or 'settings'}: {err['msg']}" for err in exc.errors())
        raise ConfigError(f"invalid settings: {problems}") from exc
    finally:
        _toml_file.reset(token)
