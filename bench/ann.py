"""The embedded knowledge store's vector index at scale (issue 36): exact vs ANN.

For each size, a knowledge database holding that many passage vectors is written (the
store's schema; one passage per document, so passage and document recall are the same),
then three fresh processes each measure one side, so each RSS is that side's alone:

- `exact`: the store's in-memory matrix (`VectorIndex`): load time, RSS, query p50/p95;
- `build`: the ANN index built from the database and saved (`knowledge.ann`): time, size;
- `ann`: the saved index loaded (start-up), RSS, query p50/p95 with the exact rescoring
  from the database that the store does, recall@10 against the exact side's top 10, and
  whether every returned cosine equals exact search's.

A query is the store's dense call, `best_per_document(query, limit=500)` (the default
`search_dense_candidates`); no model runs (the query's embedding costs the same either way).

Vectors: `--vectors` is a .npy of real MiniLM vectors of text (rows of unit float32); the
queries are 200 of its rows held out of the data. A size larger than the rest is filled
with synthetic rows: a real row plus Gaussian noise of norm `--jitter`, renormalised (say
so when reporting). Without `--vectors`, all rows are synthetic around random centres.

Usage: uv run python bench/ann.py --vectors /tmp/vecs.npy --sizes 100000,1000000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

TAG = "bench+1"
LIMIT = 500
QUERIES = 200

Matrix = npt.NDArray[np.float32]


def _rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _unit(rows: Matrix) -> Matrix:
    out: Matrix = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return out


def corpus(path: str | None, size: int, jitter: float, seed: int = 7) -> tuple[Matrix, Matrix, int]:
    """(data rows, query rows, how many data rows are real)."""
    rng = np.random.default_rng(seed)
    if path:
        base = np.load(path).astype(np.float32)
        base = _unit(base[np.linalg.norm(base, axis=1) > 0.5])
    else:
        base = _unit(rng.standard_normal((20_000, 384)).astype(np.float32))
    order = rng.permutation(len(base))
    queries, base = base[order[:QUERIES]], base[order[QUERIES:]]
    real = min(size, len(base)) if path else 0
    rows = [base[:real]] if real else []
    done = real
    while done < size:
        part = min(size - done, 50_000)
        centres = base[rng.integers(0, len(base), part)]
        noise = rng.standard_normal(centres.shape).astype(np.float32) * (jitter / np.sqrt(centres.shape[1]))
        rows.append(_unit(centres + noise))
        done += part
    return np.vstack(rows), queries, real


def write_database(path: Path, data: Matrix) -> None:
    import anyio

    from memory_bridge.stores.sqlite import SqliteKnowledgeStore

    store = SqliteKnowledgeStore(path, embedder=None)
    anyio.run(store.close)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for start in range(0, len(data), 20_000):
        part = data[start : start + 20_000]
        conn.executemany(
            "INSERT INTO passages (rowid, document, position, content, vector, model)"
            " VALUES (?, ?, 0, '', ?, ?)",
            ((start + i + 1, start + i + 1, row.tobytes(), TAG) for i, row in enumerate(part)),
        )
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'generation'")
    conn.execute("COMMIT")
    conn.close()


def _queries(index: Any, queries: Matrix) -> tuple[list[float], list[list[tuple[int, float]]]]:
    times, tops = [], []
    for query in queries:
        start = time.perf_counter()
        best = index.best_per_document(query, limit=LIMIT)
        times.append(time.perf_counter() - start)
        tops.append([(document, score) for document, (score, _) in list(best.items())[:10]])
    return times, tops


def _summary(times: list[float]) -> dict[str, float]:
    return {
        "p50_ms": 1000 * float(np.percentile(times, 50)),
        "p95_ms": 1000 * float(np.percentile(times, 95)),
    }


def phase(name: str, database: Path, queries_path: Path, connectivity: int) -> dict[str, Any]:
    """One side, in this (fresh) process."""
    from memory_bridge.search import VectorIndex, _ann
    from memory_bridge.stores.sqlite._knowledge_ann import ann_path, build, fetcher, load, save

    _ann.CONNECTIVITY = connectivity
    queries = np.load(queries_path)
    conn = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
    dimension = queries.shape[1]
    before = _rss_mib()
    start = time.perf_counter()
    if name == "build":
        graph = build(conn, TAG, dimension)
        built = time.perf_counter() - start
        save(ann_path(database), graph, TAG)
        return {"build_s": built, "file_mib": ann_path(database).stat().st_size / 2**20}
    if name == "exact":
        index: Any = VectorIndex(dimension)
        index.load(conn.execute("SELECT rowid, document, vector FROM passages WHERE model = ?", (TAG,)), 1)
    else:
        index = load(ann_path(database), TAG, dimension, fetcher(conn, TAG, dimension))
    loaded = time.perf_counter() - start
    rss = _rss_mib() - before
    first = time.perf_counter()
    index.best_per_document(queries[0], limit=LIMIT)
    first_answer = loaded + time.perf_counter() - first
    times, tops = _queries(index, queries)
    result = {
        "load_s": loaded,
        "first_answer_s": first_answer,
        "rss_added_mib": rss,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **_summary(times),
        "tops": tops,
    }
    if name == "ann":  # the graph searched wider than the default (EXPANSION, or the candidates asked)
        for expansion in (1000, 2000):
            _ann.EXPANSION = expansion
            times, tops = _queries(index, queries)
            result[f"expansion {expansion}"] = {**_summary(times), "tops": tops}
    return result


def _run_phase(name: str, database: Path, queries: Path, connectivity: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--phase", name, "--database", str(database)]
    out = subprocess.run(
        [*command, "--queries-file", str(queries), "-M", str(connectivity)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def recall(exact: list[list[tuple[int, float]]], ann: list[list[tuple[int, float]]]) -> tuple[float, float]:
    """(recall@10, largest difference between the two sides' cosines of a document both return)."""
    hits, gap = 0, 0.0
    for want, got in zip(exact, ann, strict=True):
        wanted = dict(want)
        hits += len(wanted.keys() & {d for d, _ in got})
        gap = max([gap, *(abs(wanted[d] - s) for d, s in got if d in wanted)])
    return hits / (10 * len(exact)), gap


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vectors", help=".npy of real unit vectors (rows)")
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--jitter", type=float, default=0.5, help="norm of the noise of synthetic rows")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("-M", type=int, default=32, help="graph edges per node (the store's: 32)")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--database", help=argparse.SUPPRESS)
    parser.add_argument("--queries-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, Path(args.database), Path(args.queries_file), args.M)))
        return
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        data, queries, real = corpus(args.vectors, size, args.jitter)
        with tempfile.TemporaryDirectory(prefix="memctl-ann-") as folder:
            database = Path(folder) / "knowledge.db"
            queries_path = Path(folder) / "queries.npy"
            np.save(queries_path, queries)
            write_database(database, data)
            del data
            exact = _run_phase("exact", database, queries_path, args.M)
            built = _run_phase("build", database, queries_path, args.M)
            ann = _run_phase("ann", database, queries_path, args.M)
        wider = {key: ann.pop(key) for key in list(ann) if key.startswith("expansion")}
        for side in wider.values():
            side["recall@10"], _ = recall(exact["tops"], side.pop("tops"))
        found, gap = recall(exact.pop("tops"), ann.pop("tops"))
        ann["wider"] = wider
        row = {
            "size": size,
            "real": real,
            "exact": exact,
            **built,
            "ann": ann,
            "recall@10": found,
            "score_gap": gap,
        }
        results.append(row)
        print(
            f"{size:>9,} passages ({real:,} real):\n"
            f"  exact  load {exact['load_s']:.2f} s, RSS +{exact['rss_added_mib']:.0f} MiB, "
            f"query p50 {exact['p50_ms']:.1f} / p95 {exact['p95_ms']:.1f} ms\n"
            f"  ANN    build {built['build_s']:.0f} s, file {built['file_mib']:.0f} MiB, "
            f"load {ann['load_s']:.2f} s, "
            f"first answer {ann['first_answer_s']:.2f} s, RSS +{ann['rss_added_mib']:.0f} MiB, "
            f"query p50 {ann['p50_ms']:.1f} / p95 {ann['p95_ms']:.1f} ms\n"
            f"  recall@10 vs exact {found:.3f}, largest cosine difference {gap:.1e}",
            *(
                f"\n  ANN, {key}: recall@10 {side['recall@10']:.3f}, "
                f"query p50 {side['p50_ms']:.1f} / p95 {side['p95_ms']:.1f} ms"
                for key, side in wider.items()
            ),
            sep="",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
