"""A large embedded knowledge store written in bulk, for the scale benchmark (issue 36).

Writing a million passages through `upsert` runs the model on every one (hours on this
machine), so this writes the store's own tables directly, in one transaction:

- text: sentences of the Python standard library's docstrings (PSF licence, the running
  interpreter's own), 2-5 to a passage, each passage ending with a reference of its own
  document (`ref kq3f9-a`) and each document named after its first words, so the keyword
  index sees a real vocabulary, rare words and per-document tokens; plus the 240 atoms of
  bench/retrieval_data (their own slots and metadata), the answers of its 240 queries;
- vectors: the bundled model's real vectors of the atoms and of the first `real`
  passages; every later passage is a variant of a real one (one of its sentences
  replaced, its own reference) whose vector is the real one's plus Gaussian noise of norm
  `jitter`, renormalised, as bench/ann.py fills its sizes (say so when reporting);
- documents of 1-3 passages, spread over the default slots, all of one scope.

Versions (the document log) are not written: search never reads them. Everything is
seeded, so a size is the same store every time. The ANN index is then built the way
`memctl migrate` builds it (`rebuild_vector_index`).
"""

from __future__ import annotations

import ast
import json
import random
import re
import sqlite3
import sysconfig
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

DATA = Path(__file__).resolve().parent / "retrieval_data"
SCOPE = "bench"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORDS = re.compile(r"[a-z]+")

Matrix = npt.NDArray[np.float32]


def sentences() -> list[str]:
    """Distinct prose sentences of the standard library's docstrings, in a fixed order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    seen: dict[str, None] = {}
    for path in sorted(root.rglob("*.py")):
        if any(part in ("test", "tests", "idlelib", "site-packages") for part in path.parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node)
            if not doc:
                continue
            for sentence in _SENTENCE.split(" ".join(doc.split())):
                letters = sum(c.isalpha() or c == " " for c in sentence)
                if 40 <= len(sentence) <= 240 and letters >= 0.85 * len(sentence) and sentence[0].isupper():
                    seen.setdefault(sentence, None)
    return list(seen)


def atoms() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / "atoms.jsonl").read_text().splitlines() if line]


def queries() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / "queries.jsonl").read_text().splitlines() if line]


def _reference(rng: random.Random) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(rng.choice(letters) for _ in range(5)) + "-" + rng.choice("abcdefgh")


@dataclass
class Passages:
    """The first `real` passages' sentences (their vectors are the model's)."""

    pool: list[str]
    real: list[list[str]]
    texts: list[str]


def real_passages(pool: list[str], real: int, seed: int) -> Passages:
    rng = random.Random(seed)
    chosen, texts = [], []
    for _ in range(real):
        picked = [pool[rng.randrange(len(pool))] for _ in range(rng.randint(2, 5))]
        chosen.append(picked)
        texts.append(f"{' '.join(picked)} (ref {_reference(rng)})")
    return Passages(pool, chosen, texts)


def passage_stream(
    passages: Passages, vectors: Matrix, size: int, jitter: float, seed: int
) -> Iterator[tuple[str, Matrix]]:
    """`size` (text, vector) pairs: the real passages first, then their variants."""
    rng = random.Random(seed + 1)
    noise = np.random.default_rng(seed + 1)
    real = len(passages.texts)
    for index in range(min(size, real)):
        yield passages.texts[index], vectors[index]
    done = real
    while done < size:
        part = min(size - done, 20_000)
        parents = noise.integers(0, real, part)
        jittered = vectors[parents] + noise.standard_normal((part, vectors.shape[1])).astype(np.float32) * (
            jitter / np.sqrt(vectors.shape[1])
        )
        jittered /= np.linalg.norm(jittered, axis=1, keepdims=True)
        for parent, vector in zip(parents, jittered, strict=True):
            picked = list(passages.real[parent])
            picked[rng.randrange(len(picked))] = passages.pool[rng.randrange(len(passages.pool))]
            yield f"{' '.join(picked)} (ref {_reference(rng)})", vector.astype(np.float32)
        done += part


def _name(text: str, number: int) -> str:
    words = _WORDS.findall(text.lower())[:4]
    return f"{'-'.join(words) or 'note'}-{number}.md"


def write_store(
    database: Path,
    tag: str,
    slots: list[str],
    passages: Passages,
    vectors: Matrix,
    atom_vectors: Matrix,
    size: int,
    jitter: float,
    seed: int,
) -> dict[str, float]:
    """Fill the (created, empty) store at `database` with the atoms and `size` passages in
    one transaction; seconds taken and rows written."""
    from memory_bridge.stores import DocMetadata
    from memory_bridge.stores._knowledge import document_digest

    started = time.perf_counter()
    rng = random.Random(seed + 2)
    conn = sqlite3.connect(database, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    slot_ids = dict(conn.execute("SELECT name, id FROM slots").fetchall())
    slot_list = [slot_ids[name] for name in slots]
    now = 1_780_000_000.0
    documents: list[tuple[Any, ...]] = []
    rows: list[tuple[Any, ...]] = []
    fts: list[tuple[Any, ...]] = []
    document = passage = 0
    conn.execute("BEGIN")

    def flush() -> None:
        conn.executemany(
            "INSERT INTO documents (rowid, id, slot_id, name, text, sha256, created_at, updated_at, origin,"
            " atom_type, project_module, language, task_type, error_pattern, scope)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'bench', ?, ?, ?, ?, ?, ?)",
            documents,
        )
        conn.executemany(
            "INSERT INTO passages (rowid, document, position, content, vector, model)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.executemany("INSERT INTO passages_fts (rowid, name, content) VALUES (?, ?, ?)", fts)
        documents.clear()
        rows.clear()
        fts.clear()

    def add(slot: str, name: str, texts: list[str], vecs: list[Matrix], metadata: DocMetadata) -> None:
        nonlocal document, passage
        document += 1
        text = "\n\n".join(texts)
        stamp = now + document
        documents.append(
            (
                document,
                str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                slot,
                name,
                text,
                document_digest(text, metadata).hex(),
                stamp,
                stamp,
                metadata.atom_type,
                metadata.project_module,
                metadata.language,
                metadata.task_type,
                metadata.error_pattern,
                metadata.scope,
            )
        )
        for position, (content, vector) in enumerate(zip(texts, vecs, strict=True)):
            passage += 1
            rows.append((passage, document, position, content, vector.tobytes(), tag))
            fts.append((passage, name, content))

    for atom, vector in zip(atoms(), atom_vectors, strict=True):
        meta = {k: v for k, v in atom["metadata"].items() if k != "tags"}
        add(slot_ids[atom["slot"]], atom["name"], [atom["text"]], [vector], DocMetadata(scope=SCOPE, **meta))
    stream = passage_stream(passages, vectors, size, jitter, seed)
    plain = DocMetadata(scope=SCOPE)
    while True:
        group = [pair for _, pair in zip(range(rng.choice((1, 1, 2, 2, 3))), stream, strict=False)]
        if not group:
            break
        add(
            slot_list[document % len(slot_list)],
            _name(group[0][0], document),
            [t for t, _ in group],
            [v for _, v in group],
            plain,
        )
        if len(rows) >= 20_000:
            flush()
    flush()
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return {"write_s": time.perf_counter() - started, "documents": document, "passages": passage}
