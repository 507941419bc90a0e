"""The knowledge store's ANN index on disk: `knowledge.ann` beside `knowledge.db`, and the
graph in `knowledge.ann.graph`.

`knowledge.ann` holds the rows (passage id, document rowid, removed or not), stamped with
the model tag, the store's generation when it was saved, and SHA-256s of the rows and of
the graph file. The graph is usearch's own file, written and read by usearch from its
path: loading holds one copy of it, not the file's bytes as well (at 1M passages each copy
is ~630 MiB of the bridge's peak RSS). A version-1 file (the graph inside `knowledge.ann`)
is still read, and written as two files at the next save.

The index is a cache of the database, never the truth: a missing, corrupt or other-model
index is rebuilt from the stored vectors, and a stale one (older generation, or this
process died before saving) is caught up by comparing its passage ids with the
database's: passages gone are masked out, new ones added. Both files are private (0600)
and each is replaced whole. A save holds `knowledge.ann.lock` exclusively and a load
shares it, so two writers (a background build and `memctl migrate`, say) never leave one's
rows beside the other's graph; a crash between the two replacements leaves a graph whose
checksum does not match, which reads as damaged and is rebuilt.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..._files import PRIVATE_FILE_MODE, replacing
from ...search._ann import AnnIndex, Fetch
from ...search._background import BACKGROUND_NICE

__all__ = [
    "CorruptIndex",
    "ann_path",
    "build",
    "catch_up",
    "fetcher",
    "generation_of",
    "graph_path",
    "load",
    "save",
    "state_of",
]

_MAGIC = b"memctl-ann\n"
_VERSION = 2  # the graph in a file of its own
_GRAPH_INSIDE = 1  # the version that kept the graph in this file: still read
_CHUNK = 1 << 20  # bytes hashed at a time
_IN = 900  # passage ids per `IN (...)` query
_BATCH = 8192  # passages added to the graph at a time while building


def ann_path(database: Path) -> Path:
    return database.with_suffix(".ann")


def graph_path(path: Path) -> Path:
    """Where the graph of the index saved at `path` lives."""
    return path.with_name(f"{path.name}.graph")


def generation_of(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])


def fetcher(conn: sqlite3.Connection, tag: str, dimension: int) -> Fetch:
    """Passage ids -> (those with a vector of `tag`, their vectors), read from `conn`."""

    def fetch(passages: Sequence[int]) -> tuple[list[int], Any]:
        found: list[int] = []
        blobs: list[bytes] = []
        for start in range(0, len(passages), _IN):
            part = list(passages[start : start + _IN])
            marks = ", ".join("?" * len(part))
            for rowid, blob in conn.execute(
                f"SELECT rowid, vector FROM passages WHERE rowid IN ({marks}) AND model = ?"
                " AND vector IS NOT NULL",
                (*part, tag),
            ):
                found.append(int(rowid))
                blobs.append(blob)
        return found, np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(found), dimension)

    return fetch


def build(conn: sqlite3.Connection, tag: str, dimension: int, *, background: bool = False) -> AnnIndex:
    """A new index of every stored vector of `tag`, read in one transaction of `conn`
    (with `background`, this thread drops to the lowest CPU priority first)."""
    if background:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    index = AnnIndex(dimension, fetcher(conn, tag, dimension))
    conn.execute("BEGIN")
    try:
        index.generation = generation_of(conn)
        cursor = conn.execute(
            "SELECT rowid, document, vector FROM passages WHERE model = ? AND vector IS NOT NULL"
            " ORDER BY rowid",
            (tag,),
        )
        while rows := cursor.fetchmany(_BATCH):
            vectors = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(
                len(rows), dimension
            )
            index.add_rows([r[0] for r in rows], [r[1] for r in rows], vectors, threads=os.cpu_count() or 1)
    finally:
        conn.execute("COMMIT")
    return index


def catch_up(conn: sqlite3.Connection, index: AnnIndex, tag: str, generation: int) -> int:
    """Bring `index` in step with the database at `generation`; passages changed."""
    rows = conn.execute(
        "SELECT rowid FROM passages WHERE model = ? AND vector IS NOT NULL", (tag,)
    ).fetchall()
    stored = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    passages, _, alive = index.rows()
    live = passages[alive]
    gone = np.setdiff1d(live, stored, assume_unique=True)
    index.remove_passages(gone.tolist())
    new = np.setdiff1d(stored, live, assume_unique=True).tolist()
    for start in range(0, len(new), _IN):
        part = new[start : start + _IN]
        marks = ", ".join("?" * len(part))
        found = conn.execute(
            f"SELECT rowid, document, vector FROM passages WHERE rowid IN ({marks}) ORDER BY rowid", part
        ).fetchall()
        vectors = np.frombuffer(b"".join(r[2] for r in found), dtype=np.float32).reshape(
            len(found), index.dimension
        )
        index.add_rows([r[0] for r in found], [r[1] for r in found], vectors)
    index.generation = generation
    return int(gone.size) + len(new)


@contextlib.contextmanager
def _locked(path: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold the index's lock file (exclusive to write its files, shared to read them),
    across threads and processes. A reader that cannot open it (a read-only folder) goes
    on without: the checksums still catch a mismatch."""
    try:
        fd = os.open(
            path.with_name(f"{path.name}.lock"),
            os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
            PRIVATE_FILE_MODE,
        )
    except OSError:
        if exclusive:
            raise
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def save(path: Path, index: AnnIndex, tag: str) -> None:
    """Write the index to `path` and its graph beside it, each whole (mode 0600; an old
    file stays until its new one is complete)."""
    with _locked(path, exclusive=True):
        _save(path, index, tag)


def _save(path: Path, index: AnnIndex, tag: str) -> None:
    with replacing(graph_path(path), mode=PRIVATE_FILE_MODE) as handle:
        index.save_graph(handle.name)  # usearch writes the file at this path itself
        graph_size, graph_digest = _digest(handle.name)
    passages, documents, alive = index.rows()
    parts = [passages.tobytes(), documents.tobytes(), alive.astype(np.uint8).tobytes()]
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    header = json.dumps(
        {
            "version": _VERSION,
            "tag": tag,
            "dimension": index.dimension,
            "generation": index.generation,
            "rows": len(passages),
            "sha256": digest.hexdigest(),
            "graph": graph_size,
            "graph_sha256": graph_digest,
        }
    ).encode()
    with replacing(path, mode=PRIVATE_FILE_MODE) as handle:
        handle.write(_MAGIC + len(header).to_bytes(4, "big") + header)
        for part in parts:
            handle.write(part)


class CorruptIndex(ValueError):
    """The file is not a whole index of this model."""


def _digest(path: str | Path) -> tuple[int, str]:
    """(size, SHA-256) of the file at `path`, read a chunk at a time."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _read(path: Path) -> tuple[dict[str, Any], memoryview]:
    """The header and the checked body (rows; for version 1, rows and graph) of `path`."""
    data = memoryview(path.read_bytes())
    if bytes(data[: len(_MAGIC)]) != _MAGIC:
        raise CorruptIndex("not a memctl ANN index")
    start = len(_MAGIC) + 4
    length = int.from_bytes(data[len(_MAGIC) : start], "big")
    try:
        header = json.loads(bytes(data[start : start + length]))
    except ValueError as exc:
        raise CorruptIndex("unreadable header") from exc
    if not isinstance(header, dict) or header.get("version") not in (_VERSION, _GRAPH_INSIDE):
        raise CorruptIndex("unknown format version")
    body = data[start + length :]
    rows = int(header["rows"])
    inside = int(header["graph"]) if header["version"] == _GRAPH_INSIDE else 0
    if len(body) != rows * 17 + inside:
        raise CorruptIndex("truncated")
    if hashlib.sha256(body).hexdigest() != header["sha256"]:
        raise CorruptIndex("checksum mismatch")
    return header, body


def _check_graph(path: Path, header: dict[str, Any]) -> None:
    """Raise CorruptIndex unless the graph file's bytes match the header's checksum."""
    graph = graph_path(path)
    try:
        size, digest = _digest(graph)
    except FileNotFoundError as exc:
        raise CorruptIndex(f"{graph.name} is missing") from exc
    if size != int(header["graph"]) or digest != header["graph_sha256"]:
        raise CorruptIndex(f"{graph.name} does not match its index (checksum mismatch)")


def load(path: Path, tag: str, dimension: int, fetch: Fetch) -> AnnIndex:
    """The index saved at `path`. Raises FileNotFoundError, or CorruptIndex if it is not a
    whole index of `tag`'s vectors."""
    with _locked(path, exclusive=False):
        header, body = _read(path)
        if header["tag"] != tag or header["dimension"] != dimension:
            raise CorruptIndex(f"made for {header['tag']} vectors")
        rows = int(header["rows"])
        passages = np.frombuffer(body[: 8 * rows], dtype=np.int64)
        documents = np.frombuffer(body[8 * rows : 16 * rows], dtype=np.int64)
        alive = np.frombuffer(body[16 * rows : 17 * rows], dtype=np.uint8).astype(bool)
        graph: str | memoryview = body[17 * rows :]  # version 1: the graph copies it in place
        if header["version"] == _VERSION:
            _check_graph(path, header)  # usearch is never handed a file that fails its checksum
            graph = str(graph_path(path))
        try:
            return AnnIndex.restore(
                dimension, fetch, (passages, documents, alive), graph, int(header["generation"])
            )
        except (ValueError, RuntimeError) as exc:
            raise CorruptIndex(str(exc)) from exc


def state_of(path: Path, tag: str) -> tuple[str, bool]:
    """What the file at `path` holds, in a few words, and whether it is usable (for doctor)."""
    with _locked(path, exclusive=False):
        return _state_of(path, tag)


def _state_of(path: Path, tag: str) -> tuple[str, bool]:
    try:
        header, _ = _read(path)
    except FileNotFoundError:
        return "missing", False
    except (CorruptIndex, OSError) as exc:
        return f"unusable ({exc})", False
    if header["tag"] != tag:
        return f"unusable (made for {header['tag']} vectors)", False
    if header["version"] == _VERSION:
        try:
            _check_graph(path, header)
        except CorruptIndex as exc:
            return f"unusable ({exc})", False
    return f"{header['rows']} passages at generation {header['generation']}", True
