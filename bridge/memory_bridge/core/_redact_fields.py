"""Redacting every stored string of an entry or a document, not only its text.

The write paths call these on what they are about to store: `memory_set` and the item
editor (entries), every knowledge save (documents), restore and migrate-store (archived
and copied records, and the document versions a backup carries). Every free-text field
goes through `redact`: an entry's title, body, type, tags, source and project, a
document's name, text and every metadata value, and an entry record's history snapshots,
keys and values alike.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, TypeVar

from ..stores._base import Entry, EntryRecord, EntryWrite
from ..stores._knowledge import DocMetadata
from ..stores._version_log import DocumentVersion
from ._redact import redact

__all__ = [
    "redact_entry",
    "redact_json",
    "redact_metadata",
    "redact_record",
    "redact_version",
]

_Fields = TypeVar("_Fields", EntryWrite, Entry, DocMetadata)
_ENTRY_FIELDS = ("title", "body", "type", "tags", "source", "project")


def _redact_strings(value: _Fields, names: tuple[str, ...]) -> _Fields:
    """`value` with the string and string-tuple fields `names` redacted."""
    changes: dict[str, Any] = {}
    for name in names:
        field = getattr(value, name)
        redacted = tuple(redact(t) for t in field) if isinstance(field, tuple) else redact(field)
        if redacted != field:
            changes[name] = redacted
    return dataclasses.replace(value, **changes) if changes else value


def redact_entry(write: EntryWrite) -> EntryWrite:
    """An entry write with its title, body, type, tags, source and project redacted."""
    return _redact_strings(write, _ENTRY_FIELDS)


def redact_metadata(metadata: DocMetadata) -> DocMetadata:
    """Document metadata with every value (tags included) redacted."""
    return _redact_strings(metadata, tuple(f.name for f in dataclasses.fields(DocMetadata)))


def redact_json(value: Any) -> Any:
    """A JSON value with every string in it redacted, object keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    if isinstance(value, dict):
        return {redact(str(k)): redact_json(v) for k, v in value.items()}
    return value


def _snapshot(text: str) -> str:
    """A stored history snapshot (JSON), redacted; unchanged byte for byte without a secret."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return redact(text)
    redacted = redact_json(parsed)
    return text if redacted == parsed else json.dumps(redacted)


def redact_record(record: EntryRecord) -> EntryRecord:
    """An entry record (as restore and migrate-store copy it) with its entry's free-text
    fields and every history snapshot redacted."""
    entry = None if record.entry is None else _redact_strings(record.entry, _ENTRY_FIELDS)
    history = tuple(_snapshot(h) for h in record.history)
    if entry == record.entry and history == record.history:
        return record
    return dataclasses.replace(record, entry=entry, history=history)


def redact_version(version: DocumentVersion) -> DocumentVersion:
    """A document version with its name, text and metadata redacted."""
    state = dataclasses.replace(
        version.state, text=redact(version.state.text), metadata=redact_metadata(version.state.metadata)
    )
    return dataclasses.replace(version, name=redact(version.name), state=state)
