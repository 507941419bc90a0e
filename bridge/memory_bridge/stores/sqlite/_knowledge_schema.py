"""Schema of the embedded knowledge store (its own database file, its own migrations)."""

from __future__ import annotations

import sqlite3

from .._version_log import DELETIONS_BY_DOCUMENT, VERSIONS_DIGEST, VERSIONS_TABLE
from ._schema import run_migrations

__all__ = ["FTS_TOKENIZER", "KNOWLEDGE_SCHEMA_VERSION", "migrate_knowledge"]

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"  # the keyword index's, since schema 2

_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    INSERT INTO meta (key, value) VALUES ('generation', '0');

    CREATE TABLE slots (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        description TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL
    ) WITHOUT ROWID;

    CREATE TABLE documents (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        slot_id TEXT NOT NULL REFERENCES slots (id),
        name TEXT NOT NULL,
        text TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        enabled INTEGER NOT NULL DEFAULT 1,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        origin TEXT NOT NULL DEFAULT '',
        atom_type TEXT NOT NULL DEFAULT '',
        project_module TEXT NOT NULL DEFAULT '',
        language TEXT NOT NULL DEFAULT '',
        task_type TEXT NOT NULL DEFAULT '',
        error_pattern TEXT NOT NULL DEFAULT '',
        scope TEXT NOT NULL DEFAULT '',
        UNIQUE (slot_id, name)
    );
    CREATE INDEX documents_by_slot ON documents (slot_id, enabled, atom_type);
    CREATE INDEX documents_by_scope ON documents (scope, atom_type);
    CREATE INDEX documents_by_error_pattern ON documents (error_pattern) WHERE error_pattern != '';

    CREATE TABLE document_tags (
        tag TEXT NOT NULL,
        document INTEGER NOT NULL REFERENCES documents (rowid) ON DELETE CASCADE,
        PRIMARY KEY (tag, document)
    ) WITHOUT ROWID;
    CREATE INDEX document_tags_by_document ON document_tags (document);

    CREATE TABLE passages (
        rowid INTEGER PRIMARY KEY,
        document INTEGER NOT NULL REFERENCES documents (rowid) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        content TEXT NOT NULL,
        vector BLOB,
        model TEXT
    );
    CREATE INDEX passages_by_document ON passages (document, position);
    CREATE INDEX passages_by_model ON passages (model);

    CREATE VIRTUAL TABLE passages_fts USING fts5 (name, content, tokenize = 'unicode61 remove_diacritics 2');
    """,
    # 2: stemmed keywords (`beds` finds `bed`, `adopting` finds `adopted`): the index is
    # rebuilt from the passages, which keep their vectors.
    f"""
    DROP TABLE passages_fts;
    CREATE VIRTUAL TABLE passages_fts USING fts5 (name, content, tokenize = '{FTS_TOKENIZER}');
    INSERT INTO passages_fts (rowid, name, content)
        SELECT p.rowid, d.name, p.content FROM passages AS p JOIN documents AS d ON d.rowid = p.document;
    """,
    # 3: recall stamps (when a search last returned a document, and how often).
    """
    ALTER TABLE documents ADD COLUMN last_recalled_at REAL;
    ALTER TABLE documents ADD COLUMN recall_count INTEGER NOT NULL DEFAULT 0;
    """,
    # 4: maintenance marks (superseded_by, stale, ...), a JSON object of the set ones.
    """
    ALTER TABLE documents ADD COLUMN marks TEXT NOT NULL DEFAULT '{}';
    """,
    # 5: the embedding queue in its order (first passages first) without sorting all of it.
    """
    CREATE INDEX passages_by_queue ON passages (model, position);
    """,
    # 6: every document's versions, written in the same transaction as the change itself.
    VERSIONS_TABLE + VERSIONS_DIGEST + DELETIONS_BY_DOCUMENT,
)

KNOWLEDGE_SCHEMA_VERSION = len(_MIGRATIONS)


def migrate_knowledge(conn: sqlite3.Connection, path: str) -> int:
    """Bring the knowledge database to KNOWLEDGE_SCHEMA_VERSION; return the version it had."""
    return run_migrations(conn, path, _MIGRATIONS)
