"""The knowledge store's ANN index on disk: `knowledge.ann` beside `knowledge.db`.

The file holds the graph and its rows (passage id, document rowid, removed or not),
stamped with the model tag, the store's generation when it was saved and a SHA-256 of the
rest. It is a cache of the database, never the truth: a missing, corrupt or other-model
file is rebuilt from the stored vectors, and a stale one (older generation, or this
process died before saving) is caught up by comparing its passage ids with the
database's: passages gone are masked out, new ones added. The file is private (0600) and
replaced whole, so a crash mid-write leaves the previous one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Sequence
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
    "load",
    "save",
    "state_of",
]

_MAGIC = b"memctl-ann\n"
_VERSION = 1
_IN = 900  # passage ids per `IN (...)` query
_BATCH = 8192  # passages added to the graph at a time while building


def ann_path(database: Path) -> Path:
    return database.with_suffix(".ann")


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


def save(path: Path, index: AnnIndex, tag: str) -> None:
    """Write the index to `path` whole (mode 0600; the old file stays until the new is complete)."""
    passages, documents, alive = index.rows()
    parts = [passages.tobytes(), documents.tobytes(), alive.astype(np.uint8).tobytes(), index.graph_bytes()]
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
            "graph": len(parts[3]),
            "sha256": digest.hexdigest(),
        }
    ).encode()
    with replacing(path, mode=PRIVATE_FILE_MODE) as handle:
        handle.write(_MAGIC + len(header).to_bytes(4, "big") + header)
        for part in parts:
            handle.write(part)


class CorruptIndex(ValueError):
    """The file is not a whole index of this model."""


def _read(path: Path) -> tuple[dict[str, Any], memoryview]:
    data = memoryview(path.read_bytes())
    if bytes(data[: len(_MAGIC)]) != _MAGIC:
        raise CorruptIndex("not a memctl ANN index")
    start = len(_MAGIC) + 4
    length = int.from_bytes(data[len(_MAGIC) : start], "big")
    try:
        header = json.loads(bytes(data[start : start + length]))
    except ValueError as exc:
        raise CorruptIndex("unreadable header") from exc
    if not isinstance(header, dict) or header.get("version") != _VERSION:
        raise CorruptIndex("unknown format version")
    body = data[start + length :]
    rows = int(header["rows"])
    if len(body) != rows * 17 + int(header["graph"]):
        raise CorruptIndex("truncated")
    if hashlib.sha256(body).hexdigest() != header["sha256"]:
        raise CorruptIndex("checksum mismatch")
    return header, body


def load(path: Path, tag: str, dimension: int, fetch: Fetch) -> AnnIndex:
    """The index saved at `path`. Raises FileNotFoundError, or CorruptIndex if it is not a
    whole index of `tag`'s vectors."""
    header, body = _read(path)
    if header["tag"] != tag or header["dimension"] != dimension:
        raise CorruptIndex(f"made for {header['tag']} vectors")
    rows = int(header["rows"])
    passages = np.frombuffer(body[: 8 * rows], dtype=np.int64)
    documents = np.frombuffer(body[8 * rows : 16 * rows], dtype=np.int64)
    alive = np.frombuffer(body[16 * rows : 17 * rows], dtype=np.uint8).astype(bool)
    try:
        return AnnIndex.restore(
            dimension,
            fetch,
            (passages, documents, alive),
            body[17 * rows :],  # no copy: at 1M passages each copy of the graph is ~630 MiB of peak RSS
            int(header["generation"]),
        )
    except (ValueError, RuntimeError) as exc:
        raise CorruptIndex(str(exc)) from exc


def state_of(path: Path, tag: str) -> tuple[str, bool]:
    """What the file at `path` holds, in a few words, and whether it is usable (for doctor)."""
    try:
        header, _ = _read(path)
    except FileNotFoundError:
        return "missing", False
    except (CorruptIndex, OSError) as exc:
        return f"unusable ({exc})", False
    if header["tag"] != tag:
        return f"unusable (made for {header['tag']} vectors)", False
    return f"{header['rows']} passages at generation {header['generation']}", True
