"""Issue 32, finding 3: restore, migrate-store and export keep no secret either.

The source stores are written directly (as a store from before the redactor, or one with
entry redaction turned off, holds them): secrets in every field of an entry and its
history, and in a document's name, text and metadata.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import anyio
import pytest

from memory_bridge import load_settings
from memory_bridge.stores import DocMetadata, open_entry_store, open_knowledge_store

from ..servers import RunningServer
from .conftest import configure, memctl
from .stores import note

pytestmark = pytest.mark.integration

GITHUB = "ghp_" + "q8Zr3kT1mV5xW9yB2nC4dF6gH0jL7pS1aE3u"
AWS_KEY_ID = "AKIA" + "Q7ZK4M2XW9P3B6TR"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
PASSWORD = "Hx7pQ2wL9zR4"
SECRETS = (GITHUB, AWS_KEY_ID, STRIPE, PASSWORD)


def seed_verbatim(project: Path, *, entry_id: str = "creds") -> None:
    """An entry (two revisions) and a document holding secrets in every field."""

    async def run() -> None:
        settings = load_settings(project=project)
        entries = open_entry_store(settings)
        knowledge = open_knowledge_store(settings)
        try:
            first = note(entry_id, body=f"DB_PASSWORD={PASSWORD}", tags=(STRIPE,), source=AWS_KEY_ID)
            await entries.set(first, ttl=None, if_version=None, operation_id=None)
            second = note(entry_id, title=f"token {GITHUB}", project=GITHUB)
            await entries.set(second, ttl=None, if_version=None, operation_id=None)
            metadata = DocMetadata(task_type=STRIPE, tags=(AWS_KEY_ID,), scope=settings.project_scope)
            await knowledge.upsert(
                "knowledge", f"ci {GITHUB}.md", f"the password is {PASSWORD}", metadata, origin="test"
            )
        finally:
            await entries.close()
            await knowledge.close()

    anyio.run(run)


def held(project: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((project / ".memory").rglob("*")) if p.is_file())


def found(secrets: tuple[str, ...], data: bytes) -> list[str]:
    return [s for s in secrets if s.lower().encode() in data.lower()]


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """A backup of a project whose stores hold secrets."""
    source = tmp_path / "source"
    seed_verbatim(source)
    path = tmp_path / "app.memctl.tar.gz"
    assert memctl("backup", "--project", str(source), "--output", str(path)).code == 0
    with gzip.open(path) as unzipped:
        assert found(SECRETS, unzipped.read()) == list(SECRETS)
    return path


def test_a_restore_redacts_what_the_archive_holds_and_stays_idempotent(archive: Path, tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    restored = memctl("restore", "--project", str(target), "--input", str(archive), "--json")
    assert restored.code == 0, restored.stdout + restored.stderr
    assert restored.json["ok"] and restored.json["changed"]
    assert found(SECRETS, held(target)) == []
    again = memctl("restore", "--project", str(target), "--input", str(archive), "--json")
    assert again.code == 0 and not again.json["changed"]  # compared as redacted: nothing to write


def test_a_restore_keeps_entries_verbatim_only_when_entry_redaction_is_off(
    archive: Path, tmp_path: Path
) -> None:
    target = configure(tmp_path / "target", redact_entries="false")
    assert memctl("restore", "--project", str(target), "--input", str(archive)).code == 0
    assert found(SECRETS, (target / ".memory" / "entries.db").read_bytes()) == list(SECRETS)
    assert found(SECRETS, (target / ".memory" / "knowledge.db").read_bytes()) == []


def valkey_dump(server: RunningServer) -> bytes:
    client = server.client()
    try:
        keys = list(client.scan_iter(count=1000))
        return b"".join(k + repr(client.dump(k)).encode() for k in keys)
    finally:
        client.close()


def test_migrate_store_redacts_the_copy_unless_entry_redaction_is_off(
    tmp_path: Path, valkey_url: str, valkey_server: RunningServer
) -> None:
    source = tmp_path / "source"
    seed_verbatim(source)
    copied = memctl("migrate-store", "--project", str(source), "--to", valkey_url, "--json")
    assert copied.code == 0, copied.stdout + copied.stderr
    assert copied.json["ok"] and copied.json["mismatched"] == []
    assert found(SECRETS, valkey_dump(valkey_server)) == []

    valkey_server.client().flushall()
    configure(source, redact_entries="false")
    verbatim = memctl("migrate-store", "--project", str(source), "--to", valkey_url, "--json")
    assert verbatim.code == 0 and verbatim.json["ok"]
    assert set(found(SECRETS, valkey_dump(valkey_server))) == {GITHUB, AWS_KEY_ID, STRIPE, PASSWORD}


def test_exported_file_names_hold_no_secret(tmp_path: Path) -> None:
    source = tmp_path / "source"
    seed_verbatim(source, entry_id=AWS_KEY_ID)  # an id from before ids with secrets were refused
    out = tmp_path / "out"
    exported = memctl("export", "--markdown", str(out), "--project", str(source), "--json")
    assert exported.code == 0, exported.stdout + exported.stderr
    names = [str(p.relative_to(out)) for p in out.rglob("*")]
    assert len(names) >= 4 and found(SECRETS, "\n".join(names).encode()) == []
