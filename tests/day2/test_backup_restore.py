"""`memctl backup` and `memctl restore` across stores, and every way an archive can be bad."""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest

from .conftest import Dify, configure, memctl
from .stores import documents, entry_records, seed_documents, seed_entries, set_marks, stamp_recall, upkeep

pytestmark = pytest.mark.integration


def same_entries(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal records; the expiry only to the minute (two stores' clocks and units differ)."""
    return {k: {**v, "expires_at": v["expires_at"] is not None} for k, v in a.items()} == {
        k: {**v, "expires_at": v["expires_at"] is not None} for k, v in b.items()
    } and all(abs((a[k]["expires_at"] or 0) - (b[k]["expires_at"] or 0)) <= 1 for k in a)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    project = tmp_path / "source"
    seed_entries(project)
    seed_documents(project)
    return project


def test_round_trip_embedded_to_valkey_and_dify_and_back(
    source: Path, tmp_path: Path, valkey_url: str, dify: Dify
) -> None:
    stamp_recall(source, "knowledge", "deploy.md", 1_780_000_000.25)
    stamp_recall(source, "knowledge", "deploy.md", 1_780_086_400.5)
    set_marks(source, "knowledge", "bug-auth.md", {"stale": "true", "superseded_by": "doc-7"})
    archive = tmp_path / "app.memctl.tar.gz"
    made = memctl("backup", "--project", str(source), "--output", str(archive), "--json")
    assert made.code == 0, made.stderr
    assert (made.json["entries"], made.json["documents"]) == (21, 3)
    assert archive.stat().st_mode & 0o777 == 0o600

    remote = configure(
        tmp_path / "remote",
        entry_store=valkey_url,
        knowledge_store=dify.url,
        dify_api_key_file=str(dify.key_file),
    )
    restored = memctl("restore", "--project", str(remote), "--input", str(archive), "--json")
    assert restored.code == 0, restored.stdout + restored.stderr
    report = restored.json
    assert report["ok"] and report["changed"]
    assert report["entries"]["written"] == 21 and report["knowledge"]["written"] == 3
    assert same_entries(entry_records(remote), entry_records(source))
    assert documents(remote) == documents(source)
    assert upkeep(remote) == upkeep(source)  # recall stamps and maintenance marks survive
    assert upkeep(source)[("knowledge", "deploy.md")] == ({}, 2, 1_780_086_400)

    second = tmp_path / "remote.memctl.tar.gz"
    assert memctl("backup", "--project", str(remote), "-o", str(second), "--json").code == 0
    back = tmp_path / "back"
    back.mkdir()
    home = memctl("restore", "--project", str(back), "-i", str(second), "--json")
    assert home.code == 0, home.stdout
    assert same_entries(entry_records(back), entry_records(source))
    assert documents(back) == documents(source)
    assert upkeep(back) == upkeep(source)
    history = entry_records(back)["n-000"]["history"]
    assert [json.loads(h)["operation"] for h in history] == ["modified", "created"]
    assert entry_records(back)["n-001"]["entry"] is None


def test_restoring_into_stores_that_already_match_changes_nothing(source: Path, tmp_path: Path) -> None:
    archive = tmp_path / "a.tar.gz"
    assert memctl("backup", "--project", str(source), "-o", str(archive)).code == 0
    again = memctl("restore", "--project", str(source), "-i", str(archive), "--json")
    assert again.code == 0
    assert again.json["changed"] is False
    assert again.json["entries"]["target_before"] == "identical"


def test_a_target_with_other_data_is_refused_unless_merging_or_replacing(
    source: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "a.tar.gz"
    assert memctl("backup", "--project", str(source), "-o", str(archive)).code == 0
    target = tmp_path / "target"
    seed_entries(target, count=3)
    seed_documents(target, [("knowledge", "theirs.md", "their own note", {}, True)])
    before = entry_records(target), documents(target)

    refused = memctl("restore", "--project", str(target), "-i", str(archive), "--json")
    assert refused.code == 4
    assert "--merge" in refused.json["message"] and "--replace" in refused.json["message"]
    assert (entry_records(target), documents(target)) == before

    merged = memctl("restore", "--project", str(target), "-i", str(archive), "--merge", "--json")
    assert merged.code == 0, merged.stdout
    assert ("knowledge", "theirs.md") in documents(target)
    after, archived = entry_records(target), entry_records(source)
    content = ("title", "body", "type", "tags", "source", "project")
    for id, record in archived.items():  # the archive's versions are current; shared ids keep history
        wanted = record["entry"] and {k: record["entry"][k] for k in content}
        assert (after[id]["entry"] and {k: after[id]["entry"][k] for k in content}) == wanted
        assert len(after[id]["history"]) >= len(before[0].get(id, {}).get("history", ()))

    seed_entries(target, count=25)  # ids the archive does not have
    replaced = memctl("restore", "--project", str(target), "-i", str(archive), "--replace", "--json")
    assert replaced.code == 0, replaced.stdout
    assert replaced.json["entries"]["removed"] == 5 and replaced.json["knowledge"]["removed"] == 1
    assert same_entries(entry_records(target), entry_records(source))
    assert documents(target) == documents(source)


def repack(archive: Path, out: Path, change: str) -> None:
    """Rewrite the archive with one member's content altered, the manifest left as it was."""
    with tarfile.open(archive, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    if change == "edit-entry":
        members["entries.jsonl"] = members["entries.jsonl"].replace(b"v2", b"v3", 1)
    elif change == "drop-line":
        members["entries.jsonl"] = b"".join(members["entries.jsonl"].splitlines(keepends=True)[:-1])
    elif change == "manifest":
        members["manifest.json"] = b'{"format": "something-else"}'
    with tarfile.open(out, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("truncate", "truncated or corrupt"),
        ("garbage", "not a readable memctl backup"),
        ("edit-entry", "sha256"),
        ("drop-line", "manifest says"),
        ("manifest", "does not describe a memctl backup"),
        ("missing", "no such file"),
    ],
)
def test_a_damaged_archive_stops_before_any_write(
    source: Path, tmp_path: Path, damage: str, says: str
) -> None:
    archive = tmp_path / "a.tar.gz"
    assert memctl("backup", "--project", str(source), "-o", str(archive)).code == 0
    bad = tmp_path / "bad.tar.gz"
    if damage == "truncate":
        data = archive.read_bytes()
        bad.write_bytes(data[: len(data) * 2 // 3])
    elif damage == "garbage":
        bad.write_bytes(gzip.compress(b"not a tar at all") + b"junk")
    elif damage != "missing":
        repack(archive, bad, damage)
    target = tmp_path / "target"
    seed_entries(target, count=3)
    before = entry_records(target), documents(target)
    result = memctl("restore", "--project", str(target), "-i", str(bad), "--merge", "--json")
    assert result.code == 7 and result.json["error"] == "InvalidInput", result.stdout
    assert says in result.json["message"]
    assert "nothing was written" in result.json["message"] or damage == "missing"
    assert (entry_records(target), documents(target)) == before


def test_merge_and_replace_exclude_each_other(tmp_path: Path) -> None:
    result = memctl("restore", "--project", str(tmp_path), "-i", "x", "--merge", "--replace", "--json")
    assert result.code == 2 and "choose one" in result.json["message"]


def test_an_unwritable_output_is_a_clear_error(source: Path, tmp_path: Path) -> None:
    not_a_directory = tmp_path / "notes.txt"
    not_a_directory.write_text("a file, not a directory")
    result = memctl("backup", "--project", str(source), "-o", str(not_a_directory / "a.tar.gz"), "--json")
    assert result.code == 7 and "cannot write there" in result.json["message"]
    assert not_a_directory.read_text() == "a file, not a directory"


def test_backup_progress_ends_at_its_total(source: Path, tmp_path: Path) -> None:
    """Issue 33: the entries bar ended at 21/20 (the record of a deleted entry was counted
    against a total of live entries)."""
    made = memctl("backup", "--project", str(source), "--output", str(tmp_path / "a.tar.gz"))
    assert made.code == 0, made.stderr
    bars = {m[0]: (int(m[1]), int(m[2])) for m in re.findall(r"(\w+) \S+ (\d+)/(\d+)", made.stderr)}
    assert bars == {"entries": (20, 20), "documents": (3, 3)}
