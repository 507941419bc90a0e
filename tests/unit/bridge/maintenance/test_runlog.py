"""The maintenance job's records: error signatures, and reading what is there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_bridge.maintenance import (
    RunRecord,
    StepRecord,
    cron_health,
    error_signature,
    maintain_dir,
    record_run,
)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("at 2026-12-01T18:00:01Z after 3 tries", "at 2026-11-30T02:59:59.5+01:00 after 12 tries"),
        (
            "document 7f3e2a1c-1111-2222-3333-444455556666 missing",
            "document 0a0b2a1c-9999-2222-3333-444455556666 missing",
        ),
        ("cannot open /home/a/app/.memory/k.db", "cannot open /srv/b/.memory/k.db"),
        ("commit 3f9ac0d1e2 rejected", "commit ab12cd34ef rejected"),
        ("slot 'knowledge' is full", "slot 'plans' is full"),
    ],
)
def test_errors_that_differ_only_in_ids_paths_times_and_numbers_share_a_signature(
    one: str, other: str
) -> None:
    assert error_signature(one) == error_signature(other)


def test_a_signature_is_a_short_slug_without_secrets() -> None:
    secret = "sk-ant-" + "x9" * 20
    signature = error_signature(f"Provider REFUSED key {secret}: " + "very long words " * 20)
    assert signature.startswith("provider-refused-key-sk-ant-redacted")
    assert len(signature) <= 80 and secret not in signature and "x9" not in signature
    assert error_signature("store down") != error_signature("store full")


def test_a_torn_line_is_skipped_and_a_state_dir_that_is_a_file_is_reported(tmp_path: Path) -> None:
    run = RunRecord("r1", 1.0, 2.0, "manual", [StepRecord("compile", "ok")])
    record_run(tmp_path, run)
    with (maintain_dir(tmp_path) / "runs.jsonl").open("a") as handle:
        handle.write('{"run_id": "torn", "fini')
    report = cron_health(tmp_path)
    assert report.healthy and [r["run_id"] for r in report.recent] == ["r1"]

    elsewhere = tmp_path / "other"
    (elsewhere / ".memory").mkdir(parents=True)
    maintain_dir(elsewhere).write_text("not a directory")
    broken = cron_health(elsewhere)
    assert broken.ok is False and broken.summary.startswith("cannot assess: state dir ")
    # still the tool's shape
    assert json.loads(broken.model_dump_json())["stateDir"] == str(maintain_dir(elsewhere))
