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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from .._cause import WriteCause, current_cause
from ._knowledge import METADATA_FIELDS, DocMetadata, Document
from .sqlite._db import Database
from .sqlite._schema import run_migrations

__all__ = [
    "QUEUED",
    "Change",
    "DocumentState",
    "DocumentVersion",
    "NewVersion",
    "Seen",
    "VersionLog",
]

Change = Literal["created", "updated", "enabled", "disabled", "marked", "deleted", "restored", "found"]
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

    def same(self, other: DocumentState) -> bool:
        return (
            self.same_content(other)
            and self.enabled == other.enabled
            and _set_marks(self.marks) == _set_marks(other.marks)
        )


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


_SCHEMA: tuple[str, ...] = (
    """
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
    CREATE INDEX versions_by_document ON versions (document_id);
    """,
)

_COLUMNS = (
    "slot, name, version, document_id, text, metadata, enabled, marks, deleted, at, change, cause,"
    " operation_id, restored_from"
)


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


def _insert(
    conn: sqlite3.Connection,
    slot: str,
    name: str,
    latest: DocumentVersion | None,
    new: NewVersion,
    now: float,
    cause: WriteCause,
    keep: int,
) -> DocumentVersion:
    number = (latest.version if latest is not None else 0) + 1
    state = replace(new.state, marks=_set_marks(new.state.marks))
    conn.execute(
        f"INSERT INTO versions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            slot,
            name,
            number,
            new.document_id,
            zlib.compress(state.text.encode(), 6),
            json.dumps(state.metadata.to_dict(), ensure_ascii=False, sort_keys=True),
            int(state.enabled),
            json.dumps(dict(state.marks), ensure_ascii=False),
            int(new.deleted),
            now,
            new.change,
            cause.cause,
            cause.operation_id,
            new.restored_from,
        ),
    )
    if keep > 0:
        conn.execute(
            "DELETE FROM versions WHERE slot = ? AND name = ? AND version <= ?", (slot, name, number - keep)
        )
    return DocumentVersion(
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


class VersionLog:
    """The version log in `path` (created 0600 on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = Database(path, _migrate)

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
        """The slot and name a document id was last seen under."""

        def run(conn: sqlite3.Connection, now: float) -> tuple[str, str] | None:
            row = conn.execute(
                "SELECT slot, name FROM versions WHERE document_id = ? ORDER BY at DESC LIMIT 1",
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
    ) -> DocumentVersion | None:
        """In one transaction: first make the newest version agree with `seen` (what the
        store held before the change; a state the log does not know is recorded as `found`),
        then record `change` unless it leaves the document as the newest version has it (a
        deletion or a roll-back is always recorded). With `keep`, thin the document's history
        to its newest `keep` versions. Returns the newest version."""
        cause = current_cause()

        def run(conn: sqlite3.Connection, now: float) -> DocumentVersion | None:
            latest = _latest(conn, slot, name)
            if seen is not None:
                if seen.state is None:
                    if latest is not None and not latest.deleted:  # deleted outside memctl
                        found = NewVersion(latest.document_id, latest.state, "found", deleted=True)
                        latest = _insert(conn, slot, name, latest, found, now, cause, keep)
                elif latest is None or latest.deleted or not latest.state.same_content(seen.state):
                    found = NewVersion(seen.document_id, seen.state, "found")
                    latest = _insert(conn, slot, name, latest, found, now, cause, keep)
            if change is None:
                return latest
            unchanged = latest is not None and not latest.deleted and latest.state.same(change.state)
            if unchanged and not change.deleted and change.change != "restored":
                return latest
            new = change
            if new.document_id.startswith(QUEUED) and latest is not None:
                new = replace(new, document_id=latest.document_id)
            return _insert(conn, slot, name, latest, new, now, cause, keep)

        return await self._db.write("version_record", run)

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
        self._db.close()
