"""The field redactor: every string of an entry, a document or an entry record, and
nothing else (a record without a secret is returned as it was, history byte for byte)."""

from __future__ import annotations

import json

from memory_bridge.core._redact_fields import redact_json, redact_metadata, redact_record
from memory_bridge.stores import DocMetadata, Entry, EntryRecord

TOKEN = "ghp_" + "q8Zr3kT1mV5xW9yB2nC4dF6gH0jL7pS1aE3u"


def _entry(**fields: str) -> Entry:
    base = {"id": "e", "title": "t", "body": "b", "type": "note", "source": "s", "project": "p"}
    return Entry(**{**base, **fields}, tags=("ops",), created="c", updated="u", hits=0, ttl="")


def test_json_keys_and_values_are_redacted_at_any_depth() -> None:
    value = {TOKEN: [{"k": f"x {TOKEN}"}, 3, None], "n": 1.5}
    assert redact_json(value) == {"ghp_[REDACTED]": [{"k": "x ghp_[REDACTED]"}, 3, None], "n": 1.5}


def test_metadata_values_and_tags_are_redacted() -> None:
    metadata = DocMetadata(tags=("ci", TOKEN), task_type=f"push {TOKEN}", scope="app")
    assert redact_metadata(metadata) == DocMetadata(
        tags=("ci", "ghp_[REDACTED]"), task_type="push ghp_[REDACTED]", scope="app"
    )


def test_a_record_keeps_its_history_byte_for_byte_unless_a_snapshot_holds_a_secret() -> None:
    clean = '{"title": "t",  "body": "b"}'  # spacing a re-dump would change
    secret = json.dumps({"title": "t", "body": f"token {TOKEN}"})
    record = EntryRecord("e", _entry(source=TOKEN), revision=3, history=(clean, secret))
    redacted = redact_record(record)
    assert redacted.entry is not None and redacted.entry.source == "ghp_[REDACTED]"
    assert redacted.history[0] == clean
    assert json.loads(redacted.history[1]) == {"title": "t", "body": "token ghp_[REDACTED]"}
    untouched = EntryRecord("e", _entry(), revision=1, history=(clean,))
    assert redact_record(untouched) is untouched
