"""The embedded store's schema, as numbered forward migrations.

Each migration runs in the one transaction that also records its number, so an
interrupted migration leaves the previous version intact and re-runs cleanly.
"""

from __future__ import annotations

import sqlite3

from ..._errors import ConfigError

__all__ = ["SCHEMA_VERSION", "migrate", "run_migrations"]

_MIGRATIONS: tuple[str, ...] = (
    # 1: versioned entries (memory-mcp's mem:, memver:, memrev:, memop:, and the indexes)
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    INSERT INTO meta (key, value) VALUES ('entry_count', '0');

    CREATE TABLE entries (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        type TEXT NOT NULL,
        tags TEXT NOT NULL,
        source TEXT NOT NULL,
        project TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL,
        hits INTEGER NOT NULL DEFAULT 0,
        ttl INTEGER,
        expires_at REAL
    );
    CREATE INDEX entries_by_rank ON entries (hits DESC, updated DESC, id);
    CREATE INDEX entries_by_updated ON entries (updated DESC, id);
    CREATE INDEX entries_by_type ON entries (type, hits DESC, updated DESC);
    CREATE INDEX entries_by_project ON entries (project, hits DESC, updated DESC);
    CREATE INDEX entries_by_age ON entries (hits, updated);
    CREATE INDEX entries_by_expiry ON entries (expires_at) WHERE expires_at IS NOT NULL;

    CREATE TABLE entry_tags (
        tag TEXT NOT NULL,
        id TEXT NOT NULL REFERENCES entries (id) ON DELETE CASCADE,
        PRIMARY KEY (tag, id)
    ) WITHOUT ROWID;
    CREATE INDEX entry_tags_by_id ON entry_tags (id);

    CREATE TABLE revisions (id TEXT PRIMARY KEY, rev INTEGER NOT NULL, expires_at REAL) WITHOUT ROWID;
    CREATE INDEX revisions_by_expiry ON revisions (expires_at) WHERE expires_at IS NOT NULL;

    CREATE TABLE history (
        id TEXT NOT NULL,
        rev INTEGER NOT NULL,
        snapshot TEXT NOT NULL,
        PRIMARY KEY (id, rev)
    ) WITHOUT ROWID;

    CREATE TABLE operations (
        operation_id TEXT PRIMARY KEY,
        memory_id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        action TEXT NOT NULL,
        expires_at REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX operations_by_expiry ON operations (expires_at);

    CREATE VIRTUAL TABLE entries_fts USING fts5 (
        id, title, body, tags,
        content = 'entries', content_rowid = 'rowid',
        tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER entries_fts_insert AFTER INSERT ON entries BEGIN
        INSERT INTO entries_fts (rowid, id, title, body, tags)
        VALUES (new.rowid, new.id, new.title, new.body, new.tags);
    END;
    CREATE TRIGGER entries_fts_delete AFTER DELETE ON entries BEGIN
        INSERT INTO entries_fts (entries_fts, rowid, id, title, body, tags)
        VALUES ('delete', old.rowid, old.id, old.title, old.body, old.tags);
    END;
    CREATE TRIGGER entries_fts_update AFTER UPDATE OF id, title, body, tags ON entries BEGIN
        INSERT INTO entries_fts (entries_fts, rowid, id, title, body, tags)
        VALUES ('delete', old.rowid, old.id, old.title, old.body, old.tags);
        INSERT INTO entries_fts (rowid, id, title, body, tags)
        VALUES (new.rowid, new.id, new.title, new.body, new.tags);
    END;
    """,
    # 2: vectors for hybrid memory_search, filled in the background (pending_vectors is the queue)
    """
    INSERT INTO meta (key, value) VALUES ('vector_generation', '0');
    CREATE TABLE entry_vectors (
        rowid INTEGER PRIMARY KEY,
        model TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        vector BLOB NOT NULL
    );
    CREATE TABLE pending_vectors (rowid INTEGER PRIMARY KEY);
    INSERT INTO pending_vectors (rowid) SELECT rowid FROM entries;
    CREATE TRIGGER entries_vectors_insert AFTER INSERT ON entries BEGIN
        INSERT OR IGNORE INTO pending_vectors (rowid) VALUES (new.rowid);
    END;
    CREATE TRIGGER entries_vectors_update AFTER UPDATE OF title, body ON entries BEGIN
        INSERT OR IGNORE INTO pending_vectors (rowid) VALUES (new.rowid);
    END;
    CREATE TRIGGER entries_vectors_delete AFTER DELETE ON entries BEGIN
        DELETE FROM entry_vectors WHERE rowid = old.rowid;
        DELETE FROM pending_vectors WHERE rowid = old.rowid;
    END;
    """,
)

SCHEMA_VERSION = len(_MIGRATIONS)


def _current_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def migrate(conn: sqlite3.Connection, path: str) -> int:
    """Bring the entry database to SCHEMA_VERSION; return the version it had before."""
    return run_migrations(conn, path, _MIGRATIONS)


def run_migrations(conn: sqlite3.Connection, path: str, migrations: tuple[str, ...]) -> int:
    """Apply the migrations the database lacks, each in its own transaction."""
    before = _current_version(conn)
    if before > len(migrations):
        raise ConfigError(
            f"{path}: store schema version {before} is newer than this memctl supports "
            f"({len(migrations)}); upgrade memctl"
        )
    for number in range(before + 1, len(migrations) + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            if _current_version(conn) >= number:  # another process got there first
                conn.execute("ROLLBACK")
                continue
            for statement in _split(migrations[number - 1]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return before


def _split(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
