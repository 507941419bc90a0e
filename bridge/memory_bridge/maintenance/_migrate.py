"""Forward migrations of a project's stores: find what is pending, apply it, record it.

Every step is safe to interrupt and to re-run: each unit of work (a schema version, one
Valkey entry, one batch of passages, one Dify field) commits on its own, and a step's
check looks at the data, not at a log, so the next run picks up where the last stopped.
Applied steps are appended to `.memory/migrations.jsonl`.

    entries-schema     embedded entry store: SQLite schema version (PRAGMA user_version)
    knowledge-schema   embedded knowledge store: its schema version
    valkey-legacy      memory-mcp data in Valkey: entries without a revision counter
    valkey-index       Valkey: the word index memory_search answers from, for entries
                       written before it existed (SCAN in batches, resumable); on a
                       cluster, entries of the old cluster layout moved into the shards
    dify-metadata      Dify: the metadata fields memctl writes, on every bound slot
    reembed-knowledge  embedded knowledge: passages without a vector of the current model
    reembed-entries    embedded entries: entries without a vector of the current model
    project-scope      the project's scope pinned in .memory/config.toml (stores made before
                       scopes were pinned adopt the scope their documents carry)
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from .._errors import StoreUnavailable
from .._files import private_file
from .._identity import pin_scope, pinned_scope
from .._links import open_beneath
from .._settings import Settings
from ..stores._url import make_embedder, open_dify_store, sqlite_path

if TYPE_CHECKING:
    from ..stores.sqlite._knowledge import SqliteKnowledgeStore

__all__ = ["MigrationStep", "migrate", "plan_migrations", "user_version"]

Progress = Callable[[str, int, int | None], None]
VALKEY_SCHEMA_VERSION = 1
_LOG = "migrations.jsonl"
_BATCH = 200


@dataclass
class MigrationStep:
    name: str
    store: str
    detail: str  # what is pending, or what was done
    pending: bool


def _quiet(phase: str, done: int, total: int | None) -> None:
    """The default progress callback: report nothing."""


def user_version(path: Path) -> int | None:
    """The database's schema version, read without migrating it; None if there is no file."""
    if not path.exists():
        return None
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as exc:
        raise StoreUnavailable(
            f"{path}: cannot read its schema version ({exc})", operation="migrate"
        ) from exc
    finally:
        conn.close()


def _schema_step(name: str, path: Path, latest: int) -> MigrationStep:
    version = user_version(path)
    if version is None:
        return MigrationStep(name, str(path), f"create at schema {latest}", True)
    if version < latest:
        return MigrationStep(name, str(path), f"schema {version} -> {latest}", True)
    return MigrationStep(name, str(path), f"schema {version} (current)", False)


Apply = Callable[[Progress], Awaitable[str]]


async def _project_scope(settings: Settings) -> tuple[MigrationStep, Apply] | None:
    if not settings.memory_dir.is_dir():
        return None
    pinned = pinned_scope(settings.project)
    where = str(settings.memory_dir / "config.toml")

    async def apply(progress: Progress) -> str:
        return f"scope {pin_scope(settings).stores.scope!r} pinned"

    if pinned is not None or settings.stores.scope:
        return MigrationStep(
            "project-scope", where, f"scope {(pinned or settings.stores.scope)!r}", False
        ), apply
    return MigrationStep("project-scope", where, "scope not pinned yet", True), apply


async def _entries_schema(settings: Settings) -> tuple[MigrationStep, Apply] | None:
    if not settings.stores.entry_store.startswith("sqlite"):
        return None
    from ..stores.sqlite._entries import SqliteEntryStore
    from ..stores.sqlite._schema import SCHEMA_VERSION

    path = sqlite_path(settings)

    async def apply(progress: Progress) -> str:
        store = SqliteEntryStore(path)  # opening migrates, one version per transaction
        await store.close()
        return f"schema {SCHEMA_VERSION}"

    return _schema_step("entries-schema", path, SCHEMA_VERSION), apply


async def _knowledge_schema(settings: Settings) -> tuple[MigrationStep, Apply] | None:
    if not settings.stores.knowledge_store.startswith("sqlite"):
        return None
    from ..stores.sqlite._knowledge import SqliteKnowledgeStore
    from ..stores.sqlite._knowledge_schema import KNOWLEDGE_SCHEMA_VERSION

    path = sqlite_path(settings, settings.stores.knowledge_store, "knowledge.db")

    async def apply(progress: Progress) -> str:
        store = SqliteKnowledgeStore(path, embedder=None, default_slots=settings.stores.slots)
        await store.close()
        return f"schema {KNOWLEDGE_SCHEMA_VERSION}"

    return _schema_step("knowledge-schema", path, KNOWLEDGE_SCHEMA_VERSION), apply


async def _valkey_legacy(settings: Settings) -> tuple[MigrationStep, Apply] | None:
    if not settings.stores.entry_store.startswith(("valkey", "redis")):
        return None
    from ..stores.valkey._entries import ValkeyEntryStore

    store = ValkeyEntryStore(settings.stores.entry_store)
    try:
        legacy = await store.legacy_ids()
        version = await store.schema_version()
    finally:
        await store.close()
    pending = bool(legacy) or version < VALKEY_SCHEMA_VERSION
    detail = f"{len(legacy)} entries without a revision counter" if legacy else "no legacy entries"
    if version < VALKEY_SCHEMA_VERSION:
        detail += f"; data layout {version} -> {VALKEY_SCHEMA_VERSION}"

    async def apply(progress: Progress) -> str:
        target = ValkeyEntryStore(settings.stores.entry_store)
        try:
            ids = await target.legacy_ids()
            progress("valkey-legacy", 0, len(ids))
            upgraded = 0
            for start in range(0, len(ids), _BATCH):
                chunk = ids[start : start + _BATCH]
                upgraded += await target.upgrade_legacy(chunk)
                progress("valkey-legacy", len(chunk), len(ids))
            await target.record_schema_version(VALKEY_SCHEMA_VERSION)
            return f"{upgraded} legacy entries upgraded; data layout {VALKEY_SCHEMA_VERSION}"
        finally:
            await target.close()

    return MigrationStep("valkey-legacy", store.url, detail, pending), apply


async def _valkey_index(settings: Settings) -> tuple[MigrationStep, Apply] | None:
    if not settings.stores.entry_store.startswith(("valkey", "redis")):
        return None
    from ..stores.valkey._entries import ValkeyEntryStore

    cluster = "+cluster://" in settings.stores.entry_store

    store = ValkeyEntryStore(settings.stores.entry_store)
    try:
        ready = await store.index_ready()
    finally:
        await store.close()
    detail = "word index built"
    if not ready:
        detail = (
            "entries in the old cluster layout: memory_search scans every entry until they move"
            if cluster
            else "word index not built: memory_search scans every entry"
        )

    async def apply(progress: Progress) -> str:
        target = ValkeyEntryStore(settings.stores.entry_store)
        try:
            progress("valkey-index", 0, None)
            indexed, done = 0, False
            while not done:
                batch, done = await target.build_index_step()
                indexed += batch
                progress("valkey-index", batch, None)
            done_with = "moved into the indexed shards" if cluster else "indexed"
            return f"word index built ({indexed} entries {done_with})"
        finally:
            await target.close()

    return MigrationStep("valkey-index", store.url, detail, not ready), apply


async def _dify_metadata(settings: Settings) -> tuple[MigrationStep, Apply] | None:
    if not settings.stores.knowledge_store.startswith("dify"):
        return None
    from ..stores.dify._outbox import DurableKnowledgeStore
    from ..stores.dify._store import DifyKnowledgeStore

    def open_remote() -> tuple[DurableKnowledgeStore, DifyKnowledgeStore]:
        durable = open_dify_store(settings)
        assert isinstance(durable, DurableKnowledgeStore) and isinstance(durable.inner, DifyKnowledgeStore)
        return durable, durable.inner

    durable, remote = open_remote()
    try:
        missing = await remote.missing_metadata_fields()
    finally:
        await durable.close()
    detail = (
        "; ".join(f"{slot}: {len(names)} field(s) missing" for slot, names in sorted(missing.items()))
        or "every slot has memctl's metadata fields"
    )

    async def apply(progress: Progress) -> str:
        durable, remote = open_remote()
        try:
            todo = await remote.missing_metadata_fields()
            progress("dify-metadata", 0, sum(len(v) for v in todo.values()))
            for slot, names in todo.items():
                await remote.install_metadata_fields(slot)
                progress("dify-metadata", len(names), None)
            return f"{sum(len(v) for v in todo.values())} field(s) created on {len(todo)} slot(s)"
        finally:
            await durable.close()

    return MigrationStep("dify-metadata", remote.url, detail, bool(missing)), apply


def _embedded_knowledge(settings: Settings) -> Callable[[], SqliteKnowledgeStore] | None:
    """How to open the embedded knowledge store with its model; None without a model, for
    another store, or before the schema step has run (opening now would migrate it)."""
    from ..stores.sqlite._knowledge import SqliteKnowledgeStore
    from ..stores.sqlite._knowledge_schema import KNOWLEDGE_SCHEMA_VERSION

    embedder = make_embedder(settings)
    if embedder is None or not settings.stores.knowledge_store.startswith("sqlite"):
        return None
    path = sqlite_path(settings, settings.stores.knowledge_store, "knowledge.db")
    if user_version(path) != KNOWLEDGE_SCHEMA_VERSION:
        return None

    def opened() -> SqliteKnowledgeStore:
        return SqliteKnowledgeStore(
            path,
            embedder=embedder,
            default_slots=settings.stores.slots,
            ann_threshold=settings.search.ann_threshold,
        )

    return opened


async def _reembed_knowledge(settings: Settings) -> tuple[MigrationStep, Apply] | None:
    opened = _embedded_knowledge(settings)
    if opened is None:
        return None  # checked again once the schema step has run
    store = opened()
    try:
        stale = await store.stale_passages()
    finally:
        await store.close()
    model = store.embedder.name if store.embedder is not None else ""

    async def apply(progress: Progress) -> str:
        target = opened()
        try:
            total = await target.stale_passages()
            progress("re-embedding", 0, total)
            done = 0
            while batch := await target.reembed_batch():
                done += batch
                progress("re-embedding", batch, total)
            return f"{done} passages embedded with {model}"
        finally:
            await target.close()

    return MigrationStep(
        "reembed-knowledge", str(store.path), f"{stale} passages need {model} vectors", bool(stale)
    ), apply


async def _vector_index(settings: Settings) -> tuple[MigrationStep, Apply] | None:
    """The embedded knowledge store's ANN index (`knowledge.ann`), where the store is large
    enough to search it (`search_ann_threshold`): rebuilt when missing, damaged or of
    another model. Below the threshold search is exact and there is no step."""
    opened = _embedded_knowledge(settings)
    if opened is None:
        return None
    store = opened()
    try:
        state = await store.vector_index_state()
    finally:
        await store.close()
    if state is None or not state.needed:
        return None

    async def apply(progress: Progress) -> str:
        target = opened()
        try:
            progress("building the vector index", 0, state.passages)
            built = await target.rebuild_vector_index()
            progress("building the vector index", state.passages, state.passages)
            return f"{built.saved if built else 'no index'} ({state.passages} passages)"
        finally:
            await target.close()

    detail = f"{state.saved}" if state.usable else f"{state.saved}: to rebuild for {state.passages} passages"
    return MigrationStep("vector-index", str(state.path), detail, not state.usable), apply


async def _reembed_entries(settings: Settings) -> tuple[MigrationStep, Apply] | None:
    embedder = make_embedder(settings)
    if embedder is None or not settings.stores.entry_store.startswith("sqlite"):
        return None
    from ..stores.sqlite._entries import SqliteEntryStore
    from ..stores.sqlite._schema import SCHEMA_VERSION

    path = sqlite_path(settings)
    if user_version(path) != SCHEMA_VERSION:
        return None  # checked again once the schema step has run (opening now would migrate)

    store = SqliteEntryStore(path, embedder=embedder)
    try:
        stale = await store.stale_vectors()
    finally:
        await store.close()

    async def apply(progress: Progress) -> str:
        target = SqliteEntryStore(path, embedder=embedder)
        try:
            total = await target.stale_vectors()
            progress("re-embedding", 0, total)
            done = await target.upkeep()
            progress("re-embedding", done, total)
            return f"{done} entries embedded with {embedder.name}"
        finally:
            await target.close()

    return MigrationStep(
        "reembed-entries", str(path), f"{stale} entries need {embedder.name} vectors", bool(stale)
    ), apply


_STEPS = (
    _entries_schema,
    _knowledge_schema,
    _valkey_legacy,
    _valkey_index,
    _dify_metadata,
    _reembed_knowledge,
    _vector_index,  # after re-embedding: the index is built from the current model's vectors
    _reembed_entries,
    _project_scope,  # last: the stores exist by then, and their documents say which scope to adopt
)


async def plan_migrations(settings: Settings) -> list[MigrationStep]:
    """Every step that applies to these stores, pending or not; reads only."""
    return [found[0] for check in _STEPS if (found := await check(settings)) is not None]


def _record(settings: Settings, step: MigrationStep) -> None:
    line = {**asdict(step), "applied_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    del line["pending"]
    path = private_file(settings.memory_dir / _LOG)
    appending = os.O_WRONLY | os.O_APPEND
    with os.fdopen(open_beneath(path.parent, PurePath(path.name), appending), "a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")  # never through a link, even one planted just now


async def migrate(
    settings: Settings, *, progress: Progress = _quiet
) -> tuple[list[MigrationStep], list[MigrationStep]]:
    """Apply every pending step in order; return (applied, still pending).

    Steps are checked again one by one just before they run, so a later step sees what
    an earlier one did (re-embedding runs on the migrated schema)."""
    applied: list[MigrationStep] = []
    for check in _STEPS:
        found = await check(settings)
        if found is None or not found[0].pending:
            continue
        step, apply = found
        done = MigrationStep(step.name, step.store, await apply(progress), False)
        _record(settings, done)
        applied.append(done)
    remaining = [s for s in await plan_migrations(settings) if s.pending]
    return applied, remaining
