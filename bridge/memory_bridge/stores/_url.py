"""Choosing and opening a store from its URL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .._errors import ConfigError
from .._settings import Settings
from ..search._embed import LazyEmbedder
from ._base import EntryStore
from ._knowledge import KnowledgeStore
from ._version_log import VersionLog
from ._versioned import VersionedKnowledgeStore, keep_versions

if TYPE_CHECKING:  # httpx loads with the Dify store, not with every bridge (stdio start stays fast)
    import httpx

    from .sqlite._knowledge import SqliteKnowledgeStore

__all__ = [
    "dify_outbox_path",
    "document_versions_path",
    "entry_store_scheme",
    "make_embedder",
    "open_dify_store",
    "open_entry_store",
    "open_knowledge_store",
    "open_stores",
    "sqlite_path",
]

_ENTRY_DB = "entries.db"
_KNOWLEDGE_DB = "knowledge.db"


def sqlite_path(settings: Settings, url: str | None = None, default_name: str = _ENTRY_DB) -> Path:
    """Where an embedded store of these settings lives (the entry store by default)."""
    url = settings.stores.entry_store if url is None else url
    if url == "sqlite":
        return settings.memory_dir / default_name
    parts = urlsplit(url)
    if parts.scheme != "sqlite" or parts.netloc or not parts.path:
        raise ConfigError(f"store {url!r}: expected `sqlite` or `sqlite:///absolute/path`")
    return Path(parts.path)


_VALKEY_SCHEMES = ("valkey", "valkeys", "redis", "rediss", "valkey+cluster", "valkeys+cluster")


def entry_store_scheme(url: str) -> str:
    """The entry store URL's scheme, or `ConfigError` when memctl has no such store."""
    scheme = urlsplit(url).scheme or url
    if scheme not in (*_VALKEY_SCHEMES, "sqlite"):
        raise ConfigError(
            f"entry store scheme {scheme!r} is not supported; use sqlite, sqlite:///path, "
            "valkey://host:port/db or valkeys://host:port/db"
        )
    return scheme


def open_entry_store(settings: Settings, embedder: LazyEmbedder | None = None) -> EntryStore:
    """Open the entry store the settings name (creating and migrating it if needed).

    The embedded store ranks memory_search queries by meaning too when given an embedder."""
    scheme = entry_store_scheme(settings.stores.entry_store)
    if scheme in _VALKEY_SCHEMES:
        from .valkey._entries import ValkeyEntryStore

        return ValkeyEntryStore(
            settings.stores.entry_store,
            max_versions=settings.retention.max_versions_per_entry,
            operation_ttl=settings.retention.operation_id_ttl_seconds,
        )
    from .sqlite._entries import SqliteEntryStore

    return SqliteEntryStore(
        sqlite_path(settings),
        max_versions=settings.retention.max_versions_per_entry,
        operation_ttl=settings.retention.operation_id_ttl_seconds,
        embedder=embedder,
    )


def make_embedder(settings: Settings) -> LazyEmbedder | None:
    """The embedder the settings ask for (not loaded until first used)."""
    if settings.embedding.url:
        from ..search._openai import endpoint_embedder

        return endpoint_embedder(settings.embedding.url, settings.embedding.endpoint_model)
    if settings.embedding.model == "none":
        return None
    from ..search._onnx import lazy_minilm

    cache = None if settings.embedding.model == "minilm-float" else settings.model_cache
    return lazy_minilm(settings.embedding.threads, int8_cache=cache)


def document_versions_path(settings: Settings) -> Path:
    """Where the version log of the knowledge store's documents lives: in the embedded
    store's own database, or in a file of its own in the project's `.memory/` for Dify."""
    url = settings.stores.knowledge_store
    if url.startswith("dify+"):
        return settings.memory_dir / "dify-versions.db"
    return sqlite_path(settings, url, _KNOWLEDGE_DB)


def open_knowledge_store(settings: Settings, embedder: LazyEmbedder | None = None) -> VersionedKnowledgeStore:
    """Open the knowledge store the settings name (creating and migrating it if needed),
    recording every document change in its version log."""
    keep = settings.retention.document_versions_keep
    if _knowledge_scheme(settings.stores.knowledge_store) != "sqlite":
        log = VersionLog.open(document_versions_path(settings))
        try:
            return keep_versions(open_dify_store(settings), log, keep=keep)
        except BaseException:
            log.close()
            raise
    store = _open_embedded_knowledge(settings, embedder)
    log = VersionLog(store.database, owned=False)
    try:
        log.absorb(store.path.with_name("knowledge-versions.db"))  # where the log lived before
    except BaseException:
        store.database.close()
        raise
    return keep_versions(store, log, keep=keep)


def _knowledge_scheme(url: str) -> str:
    scheme = urlsplit(url).scheme or url
    if scheme not in ("dify+https", "dify+http", "sqlite"):
        raise ConfigError(
            f"knowledge store scheme {scheme!r} is not supported; use sqlite, sqlite:///path or dify+https://host/v1"
        )
    return scheme


def _open_embedded_knowledge(settings: Settings, embedder: LazyEmbedder | None) -> SqliteKnowledgeStore:
    from .sqlite._knowledge import SqliteKnowledgeStore
    from .sqlite._knowledge_ranking import Ranking

    fusion = settings.search.fusion
    if fusion == "adaptive" and settings.embedding.url:
        fusion = "weighted"  # adaptive's cosine thresholds are the bundled model's scale
    ranking = Ranking(
        fusion=fusion,
        vector_weight=settings.search.vector_weight,
        rrf_k=settings.search.rrf_k,
        keyword_candidates=settings.search.keyword_candidates,
        dense_candidates=settings.search.dense_candidates,
        prefix_min=settings.search.prefix_min or None,
        feedback_docs=settings.search.feedback_docs,
        feedback_weight=settings.search.feedback_weight,
        second_hop=settings.search.second_hop,
        rerank=settings.search.rerank and not settings.embedding.url,  # fitted on the bundled model
    )
    return SqliteKnowledgeStore(
        sqlite_path(settings, settings.stores.knowledge_store, _KNOWLEDGE_DB),
        embedder=embedder,
        default_slots=settings.stores.slots,
        ranking=ranking,
        ann_threshold=settings.search.ann_threshold,
    )


def open_dify_store(settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> KnowledgeStore:
    """Dify behind a durable outbox, so no write is lost while Dify is down."""
    from .dify._outbox import DurableKnowledgeStore, Outbox
    from .dify._store import DifyKnowledgeStore

    base_url = settings.stores.knowledge_store.removeprefix("dify+")
    remote = DifyKnowledgeStore(
        base_url,
        settings.dify_key().get_secret_value(),
        bindings=settings.dify.datasets,
        default_slots=settings.stores.slots,
        dataset_prefix=settings.dify.dataset_prefix,
        technique=settings.dify.indexing_technique,
        wait_indexed=settings.dify.wait_indexed,
        transport=transport,
    )
    return DurableKnowledgeStore(remote, Outbox(dify_outbox_path(settings)))


def dify_outbox_path(settings: Settings) -> Path:
    """Where a project's writes wait while Dify is down."""
    return settings.memory_dir / "dify-outbox.db"


@asynccontextmanager
async def open_stores(settings: Settings) -> AsyncIterator[tuple[EntryStore, VersionedKnowledgeStore]]:
    """Both stores the settings name, each closed when the block ends (the entry store also
    when the knowledge store cannot be opened)."""
    entries = open_entry_store(settings)
    try:
        knowledge = open_knowledge_store(settings)
        try:
            yield entries, knowledge
        finally:
            await knowledge.close()
    finally:
        await entries.close()
