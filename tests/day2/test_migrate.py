"""`memctl migrate`: each store's pending steps, applied once, recorded, and resumable."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio
import pytest

from memory_bridge import load_settings
from memory_bridge.stores import KnowledgeFilter, make_embedder, open_knowledge_store
from memory_bridge.stores.dify import DifyClient
from memory_bridge.stores.sqlite import KNOWLEDGE_SCHEMA_VERSION, SCHEMA_VERSION
from memory_bridge.stores.sqlite._schema import _MIGRATIONS, run_migrations

from ..servers import RunningServer
from .conftest import Dify, configure, memctl
from .stores import entry_records, seed_documents

pytestmark = pytest.mark.integration


def names(steps: list[dict[str, object]]) -> list[object]:
    return [s["name"] for s in steps]


def step(steps: list[dict[str, str]], name: str) -> dict[str, str]:
    return next(s for s in steps if s["name"] == name)


def old_entry_store(project: Path) -> Path:
    """An entries.db at schema 1 (before vectors), holding one entry, as an old memctl left it."""
    path = project / ".memory" / "entries.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    run_migrations(conn, str(path), _MIGRATIONS[:1])
    conn.execute(
        "INSERT INTO entries (id, title, body, type, tags, source, project, created, updated)"
        " VALUES ('kept', 'Kept', 'Survives the migration', 'decision', '[]', 'test', '', 'x', 'x')"
    )
    conn.execute("INSERT INTO revisions (id, rev) VALUES ('kept', 1)")
    conn.close()
    return path


def user_version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def test_embedded_schema_dry_run_then_apply_then_nothing(tmp_path: Path) -> None:
    configure(tmp_path, embedding_model="none")
    path = old_entry_store(tmp_path)
    dry = memctl("migrate", "--project", str(tmp_path), "--dry-run", "--json")
    assert dry.code == 0 and dry.json["changed"] is True
    assert names(dry.json["pending"]) == ["entries-schema", "knowledge-schema", "project-scope"]
    assert dry.json["pending"][0]["detail"] == f"schema 1 -> {SCHEMA_VERSION}"
    assert user_version(path) == 1  # the dry run changed nothing

    applied = memctl("migrate", "--project", str(tmp_path), "--json")
    assert applied.code == 0 and applied.json["changed"] is True
    assert names(applied.json["applied"]) == ["entries-schema", "knowledge-schema", "project-scope"]
    assert applied.json["pending"] == []
    assert user_version(path) == SCHEMA_VERSION
    assert entry_records(tmp_path)["kept"]["entry"]["body"] == "Survives the migration"
    log = [json.loads(line) for line in (tmp_path / ".memory" / "migrations.jsonl").read_text().splitlines()]
    assert [entry["name"] for entry in log] == ["entries-schema", "knowledge-schema", "project-scope"]

    again = memctl("migrate", "--project", str(tmp_path), "--json")
    assert (again.code, again.json["changed"], again.json["applied"]) == (0, False, [])
    assert memctl("migrate", "--project", str(tmp_path), "--dry-run", "--json").json["changed"] is False


def legacy_entries(server: RunningServer, count: int) -> None:
    """memory-mcp 1.0 data: hashes, index sets, no revision counters, no snapshots."""
    client = server.client()
    pipe = client.pipeline()
    for n in range(count):
        pipe.hset(
            f"mem:old-{n:04}",
            mapping={
                "title": f"Old note {n}",
                "body": "From memory-mcp 1.0.",
                "type": "reference",
                "tags": "legacy,ops",
                "source": "memory-mcp",
                "project": "app",
                "created": "2025-01-02",
                "updated": "2025-01-03",
                "hits": "2",
                "ttl": "",
            },
        )
        pipe.sadd("tag:legacy", f"mem:old-{n:04}")
    pipe.execute()


def test_an_interrupted_valkey_upgrade_completes_on_the_next_run(
    tmp_path: Path, valkey_server: RunningServer, valkey_url: str
) -> None:
    count = 2000
    legacy_entries(valkey_server, count)
    project = configure(tmp_path, entry_store=valkey_url, embedding_model="none")
    dry = memctl("migrate", "--project", str(project), "--dry-run", "--json")
    pending = ["knowledge-schema", "valkey-legacy", "valkey-index", "project-scope"]
    assert names(dry.json["pending"]) == pending
    assert step(dry.json["pending"], "valkey-legacy")["detail"].startswith(
        f"{count} entries without a revision counter"
    )
    client = valkey_server.client()
    assert not client.keys("memrev:*")

    # Valkey runs out of memory part-way through: writes are refused from then on
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory", used + 250_000)
    try:
        interrupted = memctl("migrate", "--project", str(project), "--json")
    finally:
        client.config_set("maxmemory", 0)
    assert interrupted.code != 0 and "maxmemory" in interrupted.json["message"]
    done_before = len(client.keys("memrev:*"))
    assert 0 < done_before < count

    resumed = memctl("migrate", "--project", str(project), "--json")
    assert resumed.code == 0, resumed.stdout
    assert step(resumed.json["applied"], "valkey-legacy")["detail"].startswith(
        f"{count - done_before} legacy entries upgraded"
    )
    records = entry_records(project)
    assert len(records) == count
    for record in records.values():
        assert record["revision"] == 1
        assert [json.loads(h)["operation"] for h in record["history"]] == ["created"]
        assert record["entry"]["hits"] == 2 and record["entry"]["tags"] == ["legacy", "ops"]
    again = memctl("migrate", "--project", str(project), "--json")
    assert again.json["changed"] is False


def test_migrate_builds_the_valkey_word_index_for_entries_written_without_it(
    tmp_path: Path, valkey_server: RunningServer, valkey_url: str
) -> None:
    from memory_bridge.stores import EntryFilter, EntryWrite
    from memory_bridge.stores.valkey import ValkeyEntryStore

    client = valkey_server.client()

    async def fill_and_search() -> list[object]:
        store = ValkeyEntryStore(valkey_url)
        try:
            for n in range(300):
                write = EntryWrite(f"n{n}", f"Deploy step {n}", "roll the canary" * (n % 3), "note", ("ops",))
                await store.set(write, ttl=None, if_version=None, operation_id=None)
            found = await store.search(EntryFilter(tags=("ops",)), "canary dep", offset=0, limit=50)
            return [e.id for e in found.entries]
        finally:
            await store.close()

    answer = anyio.run(fill_and_search)
    indexed = {k: client.hgetall(k) for k in client.scan_iter(match="memw:*")}
    for key in [*client.scan_iter(match="memw:*"), *client.scan_iter(match="memterms:*")]:
        client.delete(key)
    client.delete("memvocab", "memidx")  # as a memctl before the word index left it

    project = configure(tmp_path, entry_store=valkey_url, embedding_model="none")
    dry = memctl("migrate", "--project", str(project), "--dry-run", "--json")
    assert step(dry.json["pending"], "valkey-index")["detail"].startswith("word index not built")
    applied = memctl("migrate", "--project", str(project), "--json")
    assert applied.code == 0, applied.stdout
    assert step(applied.json["applied"], "valkey-index")["detail"] == "word index built (300 entries indexed)"
    assert client.get("memidx") == b"ready"
    assert {k: client.hgetall(k) for k in client.scan_iter(match="memw:*")} == indexed

    async def search() -> list[object]:
        store = ValkeyEntryStore(valkey_url)
        try:
            found = await store.search(EntryFilter(tags=("ops",)), "canary dep", offset=0, limit=50)
            return [e.id for e in found.entries]
        finally:
            await store.close()

    assert anyio.run(search) == answer
    again = memctl("migrate", "--project", str(project), "--json")
    assert (again.code, again.json["changed"]) == (0, False)


def test_dify_slots_get_the_metadata_fields_memctl_writes(tmp_path: Path, dify: Dify) -> None:
    async def bare_dataset() -> str:
        client = DifyClient(dify.origin + "/v1", dify.key_file.read_text().strip())
        try:
            return str((await client.create_dataset("from-before", "", "high_quality"))["id"])
        finally:
            await client.close()

    dataset = anyio.run(bare_dataset)
    memory = tmp_path / ".memory"
    memory.mkdir()
    (memory / "config.toml").write_text(
        f'knowledge_store = "{dify.url}"\ndify_api_key_file = "{dify.key_file}"\n'
        f'embedding_model = "none"\nslots = ["knowledge"]\n[dify_datasets]\nlegacy = "{dataset}"\n'
    )
    dry = memctl("migrate", "--project", str(tmp_path), "--dry-run", "--json")
    assert names(dry.json["pending"]) == ["entries-schema", "dify-metadata", "project-scope"]
    assert step(dry.json["pending"], "dify-metadata")["detail"].startswith("legacy: ")
    applied = memctl("migrate", "--project", str(tmp_path), "--json")
    assert applied.code == 0 and names(applied.json["applied"]) == [
        "entries-schema",
        "dify-metadata",
        "project-scope",
    ]
    again = memctl("migrate", "--project", str(tmp_path), "--dry-run", "--json")
    assert again.json["pending"] == []


def test_a_new_embedding_model_re_embeds_the_knowledge_with_progress(tmp_path: Path) -> None:
    configure(tmp_path, embedding_model="none")
    seed_documents(tmp_path)
    configure(tmp_path)  # back to the bundled model
    dry = memctl("migrate", "--project", str(tmp_path), "--dry-run", "--json")
    assert step(dry.json["pending"], "reembed-knowledge")["detail"].startswith("3 passages need")
    applied = memctl("migrate", "--project", str(tmp_path))
    assert applied.code == 0 and "reembed-knowledge" in applied.stdout
    assert "re-embedding" in applied.stderr  # the progress bar
    assert memctl("migrate", "--project", str(tmp_path), "--json").json["changed"] is False


def embed_queued(project: Path) -> None:
    """Give the seeded passages their vectors (seeding writes them without a model)."""

    async def run() -> None:
        settings = load_settings(project=project)
        store = open_knowledge_store(settings, make_embedder(settings))
        try:
            await store.upkeep()
        finally:
            await store.close()

    anyio.run(run)


def test_a_damaged_vector_index_is_rebuilt_by_migrate(tmp_path: Path) -> None:
    configure(tmp_path, search_ann_threshold=2)  # three passages: above it, searched by the ANN index
    seed_documents(tmp_path)
    embed_queued(tmp_path)
    index = tmp_path / ".memory" / "knowledge.ann"
    index.write_bytes(b"not an index")  # a crash mid-write, a bad disk
    dry = memctl("migrate", "--project", str(tmp_path), "--dry-run", "--json")
    assert "to rebuild for 3 passages" in step(dry.json["pending"], "vector-index")["detail"]
    applied = memctl("migrate", "--project", str(tmp_path), "--json")
    assert applied.code == 0 and "vector-index" in names(applied.json["applied"])
    assert index.read_bytes() != b"not an index" and index.stat().st_mode & 0o777 == 0o600
    assert index.with_suffix(".ann.graph").stat().st_mode & 0o777 == 0o600
    assert memctl("migrate", "--project", str(tmp_path), "--json").json["changed"] is False
    assert keyword_hits(tmp_path, "deploy")  # the documents are all still there


def test_a_small_store_has_no_vector_index_step(tmp_path: Path) -> None:
    configure(tmp_path)
    seed_documents(tmp_path)
    embed_queued(tmp_path)
    plan = memctl("migrate", "--project", str(tmp_path), "--dry-run", "--json").json
    assert "vector-index" not in names(plan["pending"])
    assert not (tmp_path / ".memory" / "knowledge.ann").exists()


def keyword_hits(project: Path, query: str) -> list[str]:
    """Document names a keyword search of the project's knowledge store finds."""

    async def run() -> list[str]:
        settings = load_settings(project=project)
        store = open_knowledge_store(settings)
        try:
            page = await store.search(
                ["knowledge"], query, KnowledgeFilter(), top_k=5, score_threshold=None, mode="keyword"
            )
            return [hit.document_name for hit in page.hits]
        finally:
            await store.close()

    return anyio.run(run)


def test_an_unstemmed_knowledge_index_is_rebuilt_stemmed(tmp_path: Path) -> None:
    configure(tmp_path, embedding_model="none")
    seed_documents(tmp_path)
    path = tmp_path / ".memory" / "knowledge.db"
    with sqlite3.connect(path) as conn:  # the keyword index as schema 1 left it: words as written
        conn.execute("DROP TABLE passages_fts")
        conn.execute(
            "CREATE VIRTUAL TABLE passages_fts USING fts5"
            " (name, content, tokenize = 'unicode61 remove_diacritics 2')"
        )
        conn.execute(
            "INSERT INTO passages_fts (rowid, name, content) SELECT p.rowid, d.name, p.content"
            " FROM passages AS p JOIN documents AS d ON d.rowid = p.document"
        )
        # and without schema 3's recall stamps, schema 4's maintenance marks, schema 5's queue
        # index and schema 6's version log
        for column in ("last_recalled_at", "recall_count", "marks"):
            conn.execute(f"ALTER TABLE documents DROP COLUMN {column}")
        conn.execute("DROP INDEX passages_by_queue")
        conn.execute("DROP TABLE versions")
        conn.execute("PRAGMA user_version = 1")
    dry = memctl("migrate", "--project", str(tmp_path), "--dry-run", "--json")
    pending = step(dry.json["pending"], "knowledge-schema")
    assert pending["detail"] == f"schema 1 -> {KNOWLEDGE_SCHEMA_VERSION}"
    assert memctl("migrate", "--project", str(tmp_path), "--json").code == 0
    assert user_version(path) == KNOWLEDGE_SCHEMA_VERSION
    # `switched` and `deploying` are not in the text: `switch` and `Deploys` are
    assert keyword_hits(tmp_path, "switched deploying") == ["deploy.md"]


def test_migrate_moves_a_cluster_store_out_of_the_old_layout(tmp_path: Path) -> None:
    from ..integration.test_valkey_cluster_index import client_of, old_layout
    from ..servers import run_cluster

    with run_cluster() as cluster:
        old_layout(cluster, 50)
        project = configure(tmp_path, entry_store=cluster.url, embedding_model="none")
        dry = memctl("migrate", "--project", str(project), "--dry-run", "--json")
        pending = step(dry.json["pending"], "valkey-index")["detail"]
        assert pending.startswith("entries in the old cluster layout")
        applied = memctl("migrate", "--project", str(project), "--json")
        assert applied.code == 0, applied.stdout
        detail = step(applied.json["applied"], "valkey-index")["detail"]
        assert detail == "word index built (50 entries moved into the indexed shards)"
        with client_of(cluster) as client:
            assert not client.exists("{memctl}:memcount")
        again = memctl("migrate", "--project", str(project), "--json")
        assert (again.code, again.json["changed"]) == (0, False)
