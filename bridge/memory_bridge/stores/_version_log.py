"""The version log of knowledge documents: every change a document went through, kept by the
bridge in a database file of its own, whatever the knowledge store (Dify keeps no versions).

A document's versions are numbered 1, 2, … per slot and name, so a document deleted and
saved again under its name keeps one history. Each version is the document's whole state
after the change (text, metadata, enabled, maintenance marks) with when, what kind of
change, the tool or command that made it (`cause`) and its operation id. A deletion is a
tombstone version that still holds the last state, so it can be brought back.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

from .._cause import WriteCause, current_cause
from ._knowledge import METADATA_FIELDS, DocMetadata, Document, document_digest
from .sqlite._db import Database
from .sqlite._schema import run_migrations

__all__ = [
    "DELETIONS_BY_DOCUMENT",
    "QUEUED",
    "VERSIONS_DIGEST",
    "VERSIONS_TABLE",
    "Change",
    "DocumentState",
    "DocumentVersion",
    "NewVersion",
    "Seen",
    "VersionLog",
    "content_digest",
    "newest_digest",
    "record_change",
]

Change = Literal["created", "updated", "enabled", "disabled", "marked", "deleted", "restored", "found"]
CHANGES: frozenset[str] = frozenset(get_args(Change))
"""What a version records: `found` is a state the store had that the log did not know (a
document written before versions were kept, or changed outside memctl)."""


@dataclass(frozen=True, slots=True)
class DocumentState:
    """What a version holds: a document as a person sees it."""

    text: str
    metadata: DocMetadata
    enabled: bool = True
    marks: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, document: Document) -> DocumentState:
        return cls(document.text, document.metadata, document.enabled, _set_marks(document.marks))

    def same_content(self, other: DocumentState) -> bool:
        """Equal text (up to whitespace, which a store may re-flow) and metadata."""
        return self.metadata == other.metadata and self.text.split() == other.text.split()


def _set_marks(marks: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in sorted(marks.items()) if v}


@dataclass(frozen=True, slots=True)
class DocumentVersion:
    slot: str
    name: str
    version: int
    document_id: str
    state: DocumentState
    deleted: bool
    at: float  # epoch seconds
    change: Change
    cause: str
    operation_id: str
    restored_from: int | None = None  # a `restored` version: the version it brought back

    def to_dict(self) -> dict[str, object]:
        """As a backup archives it."""
        return {
            "slot": self.slot,
            "name": self.name,
            "version": self.version,
            "document_id": self.document_id,
            "text": self.state.text,
            "metadata": self.state.metadata.to_dict(),
            "enabled": self.state.enabled,
            "marks": dict(self.state.marks),
            "deleted": self.deleted,
            "at": self.at,
            "change": self.change,
            "cause": self.cause,
            "operation_id": self.operation_id,
            "restored_from": self.restored_from,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DocumentVersion:
        """From `to_dict`'s shape; KeyError, TypeError or ValueError when it is not that."""
        if data["change"] not in CHANGES:
            raise ValueError(f"unknown change {data['change']!r}")
        meta = data["metadata"]
        scalars = {k: str(meta.get(k, "")) for k in METADATA_FIELDS if k != "tags"}
        metadata = DocMetadata(tags=tuple(str(t) for t in meta.get("tags", ())), **scalars)
        marks = {str(k): str(v) for k, v in dict(data["marks"]).items()}
        restored_from = data.get("restored_from")
        return cls(
            slot=str(data["slot"]),
            name=str(data["name"]),
            version=int(data["version"]),
            document_id=str(data["document_id"]),
            state=DocumentState(str(data["text"]), metadata, bool(data["enabled"]), marks),
            deleted=bool(data["deleted"]),
            at=float(data["at"]),
            change=data["change"],
            cause=str(data["cause"]),
            operation_id=str(data["operation_id"]),
            restored_from=None if restored_from is None else int(restored_from),
        )


VERSIONS_TABLE = """
    CREATE TABLE versions (
        slot TEXT NOT NULL,
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        document_id TEXT NOT NULL,
        text BLOB NOT NULL,
        metadata TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        marks TEXT NOT NULL,
        deleted INTEGER NOT NULL,
        at REAL NOT NULL,
        change TEXT NOT NULL,
        cause TEXT NOT NULL,
        operation_id TEXT NOT NULL,
        restored_from INTEGER,
        PRIMARY KEY (slot, name, version)
    ) WITHOUT ROWID;
"""
"""The log's table: in a file of its own (Dify's log), or in the embedded store's database,
where a change and its version are written in one transaction."""

VERSIONS_BY_DOCUMENT = """
    CREATE INDEX versions_by_document ON versions (document_id);
"""
"""Every version by document id (Dify's log file, since its first schema)."""

DELETIONS_BY_DOCUMENT = """
    CREATE INDEX deletions_by_document ON versions (document_id) WHERE deleted = 1;
"""
"""Deletions by document id, all `named` needs: one index entry per deletion, not per write."""

VERSIONS_DIGEST = """
    ALTER TABLE versions ADD COLUMN digest BLOB;
"""
"""A digest of each version's content (`content_digest`), so a change is compared with the
newest version without reading its text back."""

_SCHEMA: tuple[str, ...] = (VERSIONS_TABLE + VERSIONS_BY_DOCUMENT, VERSIONS_DIGEST)

_COLUMNS = (
    "slot, name, version, document_id, text, metadata, enabled, marks, deleted, at, change, cause,"
    " operation_id, restored_from"
)


def content_digest(state: DocumentState) -> bytes:
    """Equal for states of exactly equal text and metadata (the embedded store's own digest)."""
    return document_digest(state.text, state.metadata)


def newest_digest(conn: sqlite3.Connection, slot: str, name: str) -> bytes | None:
    """The newest version's content digest; None when there is none, it is a deletion, or
    it was recorded before digests were kept."""
    row = conn.execute(
        "SELECT digest, deleted FROM versions WHERE slot = ? AND name = ? ORDER BY version DESC LIMIT 1",
        (slot, name),
    ).fetchone()
    return None if row is None or row[1] else row[0]


@dataclass(frozen=True, slots=True)
class _Head:
    """What the newest version is compared by, read without its text."""

    version: int
    document_id: str
    deleted: bool
    digest: bytes | None  # None: recorded before digests were kept
    enabled: bool
    marks: dict[str, str]


def _head(conn: sqlite3.Connection, slot: str, name: str) -> _Head | None:
    row = conn.execute(
        "SELECT version, document_id, deleted, digest, enabled, marks FROM versions"
        " WHERE slot = ? AND name = ? ORDER BY version DESC LIMIT 1",
        (slot, name),
    ).fetchone()
    if row is None:
        return None
    return _Head(int(row[0]), str(row[1]), bool(row[2]), row[3], bool(row[4]), json.loads(row[5]))


def _same_content(
    conn: sqlite3.Connection,
    slot: str,
    name: str,
    head: _Head,
    state: DocumentState,
    digest: bytes,
    *,
    loose: bool,
) -> bool:
    """Whether the newest version holds `state`'s content: exactly, or `loose`ly (up to
    whitespace, which a store such as Dify may re-flow, compared from the text itself)."""
    if head.digest == digest:
        return True
    if head.digest is not None and not loose:
        return False
    latest = _latest(conn, slot, name)
    return latest is not None and latest.state.same_content(state)


def _migrate(conn: sqlite3.Connection, path: str) -> int:
    return run_migrations(conn, path, _SCHEMA)


def _row(row: tuple[object, ...]) -> DocumentVersion:
    meta = json.loads(str(row[5]))
    scalars = {k: str(meta.get(k, "")) for k in METADATA_FIELDS if k != "tags"}
    metadata = DocMetadata(tags=tuple(str(t) for t in meta.get("tags", ())), **scalars)
    text = zlib.decompress(row[4]).decode() if isinstance(row[4], bytes) else str(row[4])
    return DocumentVersion(
        slot=str(row[0]),
        name=str(row[1]),
        version=int(str(row[2])),
        document_id=str(row[3]),
        state=DocumentState(text, metadata, bool(row[6]), json.loads(str(row[7]))),
        deleted=bool(row[8]),
        at=float(str(row[9])),
        change=str(row[10]),  # type: ignore[arg-type]
        cause=str(row[11]),
        operation_id=str(row[12]),
        restored_from=None if row[13] is None else int(str(row[13])),
    )


QUEUED = "queued:"  # the id of a Dify write still waiting in the outbox


@dataclass(frozen=True, slots=True)
class Seen:
    """What the store held before a change: the document's state, None if it had none."""

    document_id: str
    state: DocumentState | None


@dataclass(frozen=True, slots=True)
class NewVersion:
    """A change to record."""

    document_id: str
    state: DocumentState
    change: Change
    deleted: bool = False
    restored_from: int | None = None


def _latest(conn: sqlite3.Connection, slot: str, name: str) -> DocumentVersion | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM versions WHERE slot = ? AND name = ? ORDER BY version DESC LIMIT 1",
        (slot, name),
    ).fetchone()
    return None if row is None else _row(row)


def _write_row(conn: sqlite3.Connection, version: DocumentVersion, digest: bytes) -> None:
    state = version.state
    conn.execute(
        f"INSERT INTO versions ({_COLUMNS}, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            version.slot,
            version.name,
            version.version,
            version.document_id,
            zlib.compress(state.text.encode(), 1),
            json.dumps(state.metadata.to_dict(), ensure_ascii=False, sort_keys=True),
            int(state.enabled),
            json.dumps(_set_marks(state.marks), ensure_ascii=False),
            int(version.deleted),
            version.at,
            version.change,
            version.cause,
            version.operation_id,
            version.restored_from,
            digest,
        ),
    )


def _insert(
    conn: sqlite3.Connection,
    slot: str,
    name: str,
    after: int,
    new: NewVersion,
    digest: bytes,
    now: float,
    cause: WriteCause,
    keep: int,
) -> _Head:
    """Record `new` as the version after version `after` (0: the first)."""
    number = after + 1
    marks = _set_marks(new.state.marks)
    state = replace(new.state, marks=marks)
    version = DocumentVersion(
        slot,
        name,
        number,
        new.document_id,
        state,
        new.deleted,
        now,
        new.change,
        cause.cause,
        cause.operation_id,
        new.restored_from,
    )
    _write_row(conn, version, digest)
    if keep > 0:
        conn.execute(
            "DELETE FROM versions WHERE slot = ? AND name = ? AND version <= ?", (slot, name, number - keep)
        )
    return _Head(number, new.document_id, new.deleted, digest, new.state.enabled, marks)


def record_change(
    conn: sqlite3.Connection,
    now: float,
    slot: str,
    name: str,
    seen: Seen | None,
    change: NewVersion | None,
    *,
    keep: int,
    cause: WriteCause,
    change_digest: bytes | None = None,
) -> int:
    """Inside the caller's transaction: first make the newest version agree with `seen`
    (what the store held before the change; a state the log does not know is recorded as
    `found`), then record `change` unless it leaves the document as the newest version has
    it (a deletion or a roll-back is always recorded). With `keep`, thin the document's
    history to its newest `keep` versions. `change_digest` is `change`'s content digest
    when the caller knows it. Returns the newest version's number (0: none)."""
    head = _head(conn, slot, name)
    if seen is not None:
        if seen.state is None:
            if head is not None and not head.deleted:  # deleted outside memctl
                latest = _latest(conn, slot, name)
                assert latest is not None
                found = NewVersion(latest.document_id, latest.state, "found", deleted=True)
                digest = content_digest(latest.state)
                head = _insert(conn, slot, name, head.version, found, digest, now, cause, keep)
        else:
            digest = content_digest(seen.state)
            if (
                head is None
                or head.deleted
                or not _same_content(conn, slot, name, head, seen.state, digest, loose=True)
            ):
                found = NewVersion(seen.document_id, seen.state, "found")
                after = head.version if head is not None else 0
                head = _insert(conn, slot, name, after, found, digest, now, cause, keep)
    if change is None:
        return head.version if head is not None else 0
    digest = change_digest or content_digest(change.state)
    unchanged = (
        head is not None
        and not head.deleted
        and _same_content(conn, slot, name, head, change.state, digest, loose=False)
        and head.enabled == change.state.enabled
        and head.marks == _set_marks(change.state.marks)
    )
    if unchanged and not change.deleted and change.change != "restored":
        assert head is not None
        return head.version
    new = change
    if new.document_id.startswith(QUEUED) and head is not None:
        new = replace(new, document_id=head.document_id)
    after = head.version if head is not None else 0
    return _insert(conn, slot, name, after, new, digest, now, cause, keep).version


class VersionLog:
    """The version log in `database` (closed with the log when `owned`)."""

    def __init__(self, database: Database, *, owned: bool) -> None:
        self.path = database.path
        self._db = database
        self._owned = owned

    @classmethod
    def open(cls, path: Path) -> VersionLog:
        """A log in a file of its own (created 0600 on first use)."""
        return cls(Database(path, _migrate), owned=True)

    def absorb(self, path: Path) -> int:
        """Move the versions of an older log file into this log and remove the file, blocking
        (at open); returns how many were moved. Versions this log has are kept."""
        if not path.exists():
            return 0
        older = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            rows = older.execute(f"SELECT {_COLUMNS} FROM versions").fetchall()
        finally:
            older.close()
        marks = ", ".join("?" * len(_COLUMNS.split(",")))

        def run(conn: sqlite3.Connection, now: float) -> int:
            before = conn.total_changes
            conn.executemany(f"INSERT OR IGNORE INTO versions ({_COLUMNS}) VALUES ({marks})", rows)
            return conn.total_changes - before

        moved = self._db.run("version_absorb", run, True)
        for leftover in path.parent.glob(path.name + "*"):
            leftover.unlink(missing_ok=True)
        return moved

    async def latest(self, slot: str, name: str) -> DocumentVersion | None:
        return await self._db.read("version_latest", lambda conn, now: _latest(conn, slot, name))

    async def get(self, slot: str, name: str, version: int) -> DocumentVersion | None:
        def run(conn: sqlite3.Connection, now: float) -> DocumentVersion | None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM versions WHERE slot = ? AND name = ? AND version = ?",
                (slot, name, version),
            ).fetchone()
            return None if row is None else _row(row)

        return await self._db.read("version_get", run)

    async def history(
        self, slot: str, name: str, *, limit: int, before: int | None = None
    ) -> list[DocumentVersion]:
        """Up to `limit` versions, newest first (those older than version `before` if given)."""

        def run(conn: sqlite3.Connection, now: float) -> list[DocumentVersion]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM versions WHERE slot = ? AND name = ? AND version < ?"
                " ORDER BY version DESC LIMIT ?",
                (slot, name, before if before is not None else 2**62, limit),
            ).fetchall()
            return [_row(r) for r in rows]

        return await self._db.read("version_history", run)

    async def named(self, document_id: str) -> tuple[str, str] | None:
        """The slot and name a deleted document's id was last seen under."""

        def run(conn: sqlite3.Connection, now: float) -> tuple[str, str] | None:
            row = conn.execute(
                "SELECT slot, name FROM versions WHERE document_id = ? AND deleted = 1"
                " ORDER BY at DESC LIMIT 1",
                (document_id,),
            ).fetchone()
            return None if row is None else (str(row[0]), str(row[1]))

        return await self._db.read("version_named", run)

    async def deleted(self, slot: str | None = None) -> list[DocumentVersion]:
        """The tombstones of documents deleted and not brought back, newest first."""

        def run(conn: sqlite3.Connection, now: float) -> list[DocumentVersion]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM versions v WHERE deleted = 1 AND (? IS NULL OR slot = ?)"
                " AND version = (SELECT MAX(version) FROM versions w"
                " WHERE w.slot = v.slot AND w.name = v.name)"
                " ORDER BY at DESC",
                (slot, slot),
            ).fetchall()
            return [_row(r) for r in rows]

        return await self._db.read("version_deleted", run)

    async def record(
        self, slot: str, name: str, seen: Seen | None, change: NewVersion | None, *, keep: int = 0
    ) -> int:
        """`record_change` in a transaction of its own."""
        cause = current_cause()
        return await self._db.write(
            "version_record",
            lambda conn, now: record_change(conn, now, slot, name, seen, change, keep=keep, cause=cause),
        )

    async def export(self, batch: int = 500) -> AsyncIterator[list[DocumentVersion]]:
        """Every version, in batches, in (slot, name, version) order."""
        after: tuple[str, str, int] = ("", "", 0)
        while True:

            def run(
                conn: sqlite3.Connection, now: float, after: tuple[str, str, int] = after
            ) -> list[DocumentVersion]:
                rows = conn.execute(
                    f"SELECT {_COLUMNS} FROM versions WHERE (slot, name, version) > (?, ?, ?)"
                    " ORDER BY slot, name, version LIMIT ?",
                    (*after, batch),
                ).fetchall()
                return [_row(r) for r in rows]

            page = await self._db.read("version_export", run)
            if not page:
                return
            yield page
            last = page[-1]
            after = (last.slot, last.name, last.version)

    async def adopt(self, versions: Sequence[DocumentVersion], operation_id: str) -> tuple[int, int]:
        """Take in an archive's versions (a restore): a document whose history here is empty,
        or holds only what operation `operation_id` (the restore) wrote, gets the archive's
        history instead; one with a history of its own keeps it. Returns how many documents
        took the archive's history and how many kept their own."""
        by_key: dict[tuple[str, str], list[DocumentVersion]] = {}
        for version in versions:
            by_key.setdefault((version.slot, version.name), []).append(version)

        def run(conn: sqlite3.Connection, now: float) -> tuple[int, int]:
            adopted = kept = 0
            for (slot, name), history in by_key.items():
                own = conn.execute(
                    "SELECT count(*) FROM versions WHERE slot = ? AND name = ? AND operation_id != ?",
                    (slot, name, operation_id),
                ).fetchone()[0]
                if own:
                    kept += 1
                    continue
                conn.execute("DELETE FROM versions WHERE slot = ? AND name = ?", (slot, name))
                for version in sorted(history, key=lambda v: v.version):
                    _write_row(conn, version, content_digest(version.state))
                adopted += 1
            return adopted, kept

        return await self._db.write("version_adopt", run)

    async def thin(self, older_than: float, *, dry_run: bool) -> list[tuple[str, str, int]]:
        """Keep, of each document's versions made before `older_than`, the last of each UTC
        day and every deletion; the newest version is always kept (it is the last of its
        day). Returns (slot, name, versions removed — or, `dry_run`, that would be) per
        document thinned."""
        thinned = (
            "FROM versions AS v WHERE v.at < ? AND v.deleted = 0 AND EXISTS (SELECT 1 FROM versions AS w"
            " WHERE w.slot = v.slot AND w.name = v.name AND w.version > v.version AND w.deleted = 0"
            " AND CAST(w.at / 86400 AS INTEGER) = CAST(v.at / 86400 AS INTEGER))"
        )

        def run(conn: sqlite3.Connection, now: float) -> list[tuple[str, str, int]]:
            rows = conn.execute(
                f"SELECT v.slot, v.name, count(*) {thinned} GROUP BY v.slot, v.name ORDER BY v.slot, v.name",
                (older_than,),
            ).fetchall()
            if not dry_run:
                conn.execute(
                    "DELETE FROM versions WHERE (slot, name, version) IN"
                    f" (SELECT v.slot, v.name, v.version {thinned})",
                    (older_than,),
                )
            return [(str(slot), str(name), int(count)) for slot, name, count in rows]

        return await (self._db.read if dry_run else self._db.write)("version_thin", run)

    async def size(self) -> tuple[int, int]:
        """How many versions the log holds, and of how many documents."""

        def run(conn: sqlite3.Connection, now: float) -> tuple[int, int]:
            (versions,) = conn.execute("SELECT COUNT(*) FROM versions").fetchone()
            (documents,) = conn.execute(
                "SELECT COUNT(*) FROM (SELECT DISTINCT slot, name FROM versions)"
            ).fetchone()
            return int(versions), int(documents)

        return await self._db.read("version_size", run)

    def close(self) -> None:
        if self._owned:
            self._db.close()
