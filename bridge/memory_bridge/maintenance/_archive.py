"""The backup archive: a gzip'd tar of JSON Lines files and a manifest with counts and sha256.

    manifest.json      format, version, when, where from, per-file count/bytes/sha256, slots
    entries.jsonl      one EntryRecord per line (entry, revision, history, expiry)
    knowledge.jsonl    one document per line (slot, name, text, enabled, metadata, origin, ...)
    versions.jsonl     one document version per line (the version log; absent from older archives)

`verify_archive` reads every byte and parses every line before a restore writes anything;
any problem is an InvalidInput naming the file and saying what to do.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any

from .._errors import InvalidInput
from .._files import replacing
from ..stores._base import EntryRecord
from ..stores._knowledge import MARK_FIELDS, DocMetadata
from ..stores._version_log import DocumentVersion

__all__ = [
    "ARCHIVE_FORMAT",
    "ARCHIVE_VERSION",
    "ArchiveWriter",
    "ArchivedDocument",
    "Manifest",
    "iter_entry_batches",
    "verify_archive",
]

ARCHIVE_FORMAT = "memctl-backup"
ARCHIVE_VERSION = 1
ENTRIES = "entries.jsonl"
KNOWLEDGE = "knowledge.jsonl"
VERSIONS = "versions.jsonl"
MANIFEST = "manifest.json"
_BATCH = 500
_OPERATION = "restore"


@dataclass(frozen=True, slots=True)
class ArchivedDocument:
    """A knowledge document as archived; id and timestamps are informational on restore."""

    slot: str
    name: str
    text: str
    enabled: bool
    metadata: DocMetadata
    origin: str = ""
    id: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0
    last_recalled_at: float | None = None
    recall_count: int = 0
    marks: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "slot": self.slot,
            "name": self.name,
            "text": self.text,
            "enabled": self.enabled,
            "metadata": self.metadata.to_dict(),
            "origin": self.origin,
            "id": self.id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "last_recalled_at": self.last_recalled_at,
            "recall_count": self.recall_count,
            "marks": self.marks,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArchivedDocument:
        raw = data["metadata"]
        known = {f.name for f in fields(DocMetadata)}
        if not isinstance(raw, dict) or set(raw) - known:
            raise ValueError(f"metadata must be an object with keys from {sorted(known)}")
        metadata = DocMetadata(**{**raw, "tags": tuple(str(t) for t in raw.get("tags", ()))})
        if not isinstance(data["enabled"], bool):
            raise ValueError("enabled must be true or false")
        marks = data.get("marks") or {}  # archives before recall stamps and marks have neither
        if not isinstance(marks, dict) or set(marks) - set(MARK_FIELDS):
            raise ValueError(f"marks must be an object with keys from {list(MARK_FIELDS)}")
        last = data.get("last_recalled_at")
        return cls(
            slot=str(data["slot"]),
            name=str(data["name"]),
            text=str(data["text"]),
            enabled=data["enabled"],
            metadata=metadata,
            origin=str(data.get("origin", "")),
            id=str(data.get("id", "")),
            created_at=float(data.get("created_at", 0.0)),
            updated_at=float(data.get("updated_at", 0.0)),
            last_recalled_at=None if last is None else float(last),
            recall_count=int(data.get("recall_count", 0)),
            marks={str(k): str(v) for k, v in marks.items() if v},
        )

    def content(self) -> tuple[str, str, DocMetadata, bool]:
        """What a restore must reproduce (ids and timestamps are the target's own)."""
        return self.text, self.origin, self.metadata, self.enabled

    def upkeep(self) -> tuple[tuple[tuple[str, str], ...], int, int | None]:
        """The maintenance state a restore must reproduce: marks and recall stamps (to the
        second: stores keep milliseconds at most)."""
        last = None if self.last_recalled_at is None else round(self.last_recalled_at)
        return tuple(sorted(self.marks.items())), self.recall_count, last


@dataclass(frozen=True, slots=True)
class Manifest:
    created: str
    source: dict[str, str]
    files: dict[str, dict[str, Any]]
    slots: list[dict[str, str]] = field(default_factory=list)

    @property
    def entry_count(self) -> int:
        return int(self.files[ENTRIES]["count"])

    @property
    def live_entry_count(self) -> int:
        """Entries not deleted (the others' records carry only their history)."""
        return int(self.files[ENTRIES].get("live", self.entry_count))

    @property
    def document_count(self) -> int:
        return int(self.files[KNOWLEDGE]["count"])

    @property
    def version_count(self) -> int:
        return int(self.files.get(VERSIONS, {}).get("count", 0))

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": ARCHIVE_FORMAT,
            "version": ARCHIVE_VERSION,
            "created": self.created,
            "source": self.source,
            "files": self.files,
            "slots": self.slots,
        }


class _Counter:
    """A JSON Lines file being written, with its running sha256 and line count."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: IO[bytes] = path.open("wb")
        self.sha = hashlib.sha256()
        self.count = 0
        self.bytes = 0

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        self.handle.write(line)
        self.sha.update(line)
        self.count += 1
        self.bytes += len(line)

    def summary(self) -> dict[str, Any]:
        self.handle.close()
        return {"count": self.count, "bytes": self.bytes, "sha256": self.sha.hexdigest()}


class ArchiveWriter:
    """Collect records in a temporary directory, then write the archive in one rename."""

    def __init__(self, output: Path, source: dict[str, str]) -> None:
        self.output = output
        self.source = source
        self._dir = tempfile.TemporaryDirectory(prefix="memctl-backup-")
        base = Path(self._dir.name)
        self.entries = _Counter(base / ENTRIES)
        self.knowledge = _Counter(base / KNOWLEDGE)
        self.versions = _Counter(base / VERSIONS)
        self.live_entries = 0
        self.slots: list[dict[str, str]] = []

    def add_entries(self, records: list[EntryRecord]) -> None:
        for record in records:
            self.entries.write(record.to_dict())
            self.live_entries += record.entry is not None

    def add_document(self, document: ArchivedDocument) -> None:
        self.knowledge.write(document.to_dict())

    def add_versions(self, versions: list[DocumentVersion]) -> None:
        for version in versions:
            self.versions.write(version.to_dict())

    def finish(self) -> Manifest:
        """Write the archive atomically (a temporary file beside it, then a rename)."""
        manifest = Manifest(
            created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            source=self.source,
            files={
                ENTRIES: {**self.entries.summary(), "live": self.live_entries},
                KNOWLEDGE: self.knowledge.summary(),
                VERSIONS: self.versions.summary(),
            },
            slots=self.slots,
        )
        with ExitStack() as stack:
            stack.callback(self._dir.cleanup)
            try:
                raw = stack.enter_context(replacing(self.output, mode=0o600))
            except OSError as exc:
                raise InvalidInput("output", f"{self.output}: cannot write there ({exc.strerror})") from exc
            with (
                gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3, mtime=0) as packed,
                tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar,
            ):
                data = json.dumps(manifest.to_dict(), indent=2).encode()
                info = tarfile.TarInfo(MANIFEST)
                info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
                tar.addfile(info, io.BytesIO(data))
                for counter in (self.entries, self.knowledge, self.versions):
                    tar.add(counter.path, arcname=counter.path.name, filter=_private)
        return manifest

    def discard(self) -> None:
        self._dir.cleanup()


def _private(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mode, info.uid, info.gid, info.uname, info.gname = 0o600, 0, 0, "", ""
    return info


def _bad(path: Path, problem: str) -> InvalidInput:
    return InvalidInput(
        "archive",
        f"{path}: {problem}; nothing was written. Take a new backup, or restore another copy of this one",
        operation=_OPERATION,
    )


@contextmanager
def _members(path: Path) -> Iterator[Callable[[str], IO[bytes]]]:
    """Open the archive; yield a function that opens one member for streaming."""
    try:
        tar = tarfile.open(path, mode="r:gz")  # noqa: SIM115 (closed when the block ends)
    except FileNotFoundError as exc:
        raise InvalidInput("archive", f"{path}: no such file", operation=_OPERATION) from exc
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise _bad(path, f"not a readable memctl backup ({exc})") from exc

    def member(name: str) -> IO[bytes]:
        try:
            handle = tar.extractfile(name)
        except KeyError as exc:
            raise _bad(path, f"{name} is missing from the archive") from exc
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
            raise _bad(path, f"the archive is truncated or corrupt ({exc})") from exc
        if handle is None:
            raise _bad(path, f"{name} is not a regular file")
        return handle

    try:
        yield member
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise _bad(path, f"the archive is truncated or corrupt ({exc})") from exc
    except OSError as exc:
        raise _bad(path, f"the archive is truncated or corrupt ({exc.strerror or exc})") from exc
    finally:
        tar.close()


def _manifest(path: Path, open_member: Callable[[str], IO[bytes]]) -> Manifest:
    try:
        data = json.loads(open_member(MANIFEST).read())
    except (ValueError, UnicodeDecodeError) as exc:
        raise _bad(path, f"{MANIFEST} is not valid JSON") from exc
    if not isinstance(data, dict) or data.get("format") != ARCHIVE_FORMAT:
        raise _bad(path, f"{MANIFEST} does not describe a memctl backup")
    if data.get("version") != ARCHIVE_VERSION:
        raise InvalidInput(
            "archive",
            f"{path}: archive format version {data.get('version')!r}; this memctl reads version "
            f"{ARCHIVE_VERSION}. Restore it with the memctl release that wrote it; nothing was written",
            operation=_OPERATION,
        )
    try:
        optional = (VERSIONS,) if VERSIONS in data["files"] else ()
        files = {name: dict(data["files"][name]) for name in (ENTRIES, KNOWLEDGE, *optional)}
        for summary in files.values():
            int(summary["count"]), int(summary["bytes"]), str(summary["sha256"])
        return Manifest(str(data["created"]), dict(data["source"]), files, list(data.get("slots", [])))
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(path, f"{MANIFEST} lacks a field ({exc})") from exc


def _lines(path: Path, handle: IO[bytes], name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(handle, start=1):
        try:
            value = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            raise _bad(path, f"{name} line {number} is not valid JSON") from exc
        if not isinstance(value, dict):
            raise _bad(path, f"{name} line {number} is not a JSON object")
        yield number, value


def _check_file(
    path: Path,
    open_member: Callable[[str], IO[bytes]],
    name: str,
    summary: dict[str, Any],
    accept: Callable[[dict[str, Any]], None],
) -> None:
    """Checksum, size and count of one member; every line parsed and handed to `accept`."""
    sha = hashlib.sha256()
    size = count = 0
    handle = open_member(name)
    for number, line in enumerate(handle, start=1):
        sha.update(line)
        size += len(line)
        count += 1
        try:
            accept(json.loads(line))
        except (ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise _bad(path, f"{name} line {number} is not a valid record ({exc})") from exc
    if size != int(summary["bytes"]) or count != int(summary["count"]):
        raise _bad(
            path,
            f"{name} holds {count} records in {size} bytes, the manifest says "
            f"{summary['count']} in {summary['bytes']} (truncated?)",
        )
    if sha.hexdigest() != summary["sha256"]:
        raise _bad(path, f"{name} fails its sha256 checksum (the file was changed or damaged)")


def verify_archive(
    path: Path,
    *,
    on_entry: Callable[[EntryRecord], None] = lambda record: None,
    on_document: Callable[[ArchivedDocument], None] = lambda document: None,
    on_version: Callable[[DocumentVersion], None] = lambda version: None,
) -> Manifest:
    """Read the whole archive and check it, handing each parsed record to the callbacks;
    raise InvalidInput on the first problem."""
    with _members(path) as open_member:
        manifest = _manifest(path, open_member)
        _check_file(
            path, open_member, ENTRIES, manifest.files[ENTRIES], lambda v: on_entry(EntryRecord.from_dict(v))
        )
        _check_file(
            path,
            open_member,
            KNOWLEDGE,
            manifest.files[KNOWLEDGE],
            lambda v: on_document(ArchivedDocument.from_dict(v)),
        )
        if VERSIONS in manifest.files:
            _check_file(
                path,
                open_member,
                VERSIONS,
                manifest.files[VERSIONS],
                lambda v: on_version(DocumentVersion.from_dict(v)),
            )
    return manifest


def iter_entry_batches(path: Path) -> Iterator[list[EntryRecord]]:
    """The archive's entry records in batches (call verify_archive first)."""
    with _members(path) as open_member:
        batch: list[EntryRecord] = []
        for _, value in _lines(path, open_member(ENTRIES), ENTRIES):
            batch.append(EntryRecord.from_dict(value))
            if len(batch) >= _BATCH:
                yield batch
                batch = []
        if batch:
            yield batch
