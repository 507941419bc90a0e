"""The embedded knowledge store at 10k, 100k and 1M passages (issue 36): hybrid search,
ANN recall, the bridge's RSS and its start-up to the first answer, ANN beside exact.

For each size a store is written in bulk (bench/_big_store.py: real text, the model's
vectors for a real subset and jittered copies for the rest) into a fresh project, and its
ANN index is built as `memctl migrate` builds it. Then, each in a fresh process so each
RSS is its own:

- `search`: the store opened as the bridge opens it, the 240 queries of
  bench/retrieval_data run through `search_memory` (the tool's operation: query
  embedding by the model, FTS5 keywords, dense, fusion, second stage, calibration; best
  effort, so every query returns 10 records) once with the ANN index (the default
  threshold) and once exact (`search_ann_threshold` 0: the in-memory matrix), the same
  queries in dense mode alone too; p50/p95, recall@10 of the ANN side against exact, and
  how often the query's answer (its atom) is in the top 10;
- `bridge`: `memctl serve` spawned over stdio by the MCP SDK's client (as
  bench/startup.py does), timed from spawn to the first `search_memory` result, then the
  queries through MCP and the bridge process's RSS (VmRSS, VmHWM), ANN and exact.

    nice -n 10 uv run --frozen python bench/knowledge_scale.py --dir /tmp/scale \\
        --sizes 10000,100000,1000000 --json /tmp/scale/result.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from _env import clean_env, git_commit

REPO = Path(__file__).resolve().parent.parent
SEED = 36


def _settings(project: Path, threshold: int | None) -> Any:
    from memory_bridge import load_settings

    flags: dict[str, Any] = {"project": project}
    if threshold is not None:
        flags["search_ann_threshold"] = threshold
    return load_settings(**flags)


def _rss() -> dict[str, float]:
    return _status(os.getpid())


def _status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak) of a process, MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def _pct(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return 1000 * ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# -- phases, each in its own process ---------------------------------------------------------


def phase_vectors(folder: Path, real: int) -> dict[str, Any]:
    """The text pool and the model's vectors of the atoms and the real passages (cached)."""
    import numpy as np

    import _big_store as big
    from memory_bridge.stores import make_embedder

    cache = folder / f"real-{SEED}-{real}.npz"
    if cache.exists():
        return {"cached": str(cache)}
    started = time.perf_counter()
    pool = big.sentences()
    passages = big.real_passages(pool, real, SEED)
    embedder = make_embedder(_settings(folder, None))
    assert embedder is not None
    step = 64
    vectors = np.vstack(
        [embedder.embed_documents(passages.texts[i : i + step]) for i in range(0, real, step)]
    ).astype(np.float32)
    atom_vectors = embedder.embed_documents([a["text"] for a in big.atoms()]).astype(np.float32)
    (folder / "pool.json").write_text(json.dumps(pool))
    np.savez(cache, vectors=vectors, atoms=atom_vectors)
    return {"pool": len(pool), "real": real, "embed_s": time.perf_counter() - started}


def phase_build(folder: Path, project: Path, size: int, real: int, jitter: float) -> dict[str, Any]:
    import numpy as np

    import _big_store as big
    from memory_bridge.stores import make_embedder
    from memory_bridge.stores.sqlite import SqliteKnowledgeStore
    from memory_bridge.stores.sqlite._knowledge_vectors import TEXT_FORMAT

    (project / ".memory").mkdir(parents=True)
    (project / ".memory" / "config.toml").write_text(f'scope = "{big.SCOPE}"\n')
    settings = _settings(project, None)
    embedder = make_embedder(settings)
    assert embedder is not None
    database = settings.memory_dir / "knowledge.db"

    def opened() -> SqliteKnowledgeStore:  # as `memctl migrate` opens it
        return SqliteKnowledgeStore(
            database,
            embedder=embedder,
            default_slots=settings.stores.slots,
            ann_threshold=settings.search.ann_threshold,
        )

    async def create() -> None:
        store = opened()
        await store.list_slots()  # the schema and the default slots
        await store.close()

    anyio.run(create)
    cached = np.load(folder / f"real-{SEED}-{real}.npz")
    pool = json.loads((folder / "pool.json").read_text())
    passages = big.real_passages(pool, real, SEED)
    tag = f"{embedder.name}+{TEXT_FORMAT}"
    result: dict[str, Any] = big.write_store(
        database, tag, settings.stores.slots, passages, cached["vectors"], cached["atoms"], size, jitter, SEED
    )

    async def index() -> None:
        store = opened()
        try:
            state = await store.vector_index_state()
            if state is not None and state.needed:  # the `vector-index` step of memctl migrate
                started = time.perf_counter()
                await store.rebuild_vector_index()
                result["ann_build_s"] = time.perf_counter() - started
        finally:
            await store.close()

    anyio.run(index)
    result["db_mib"] = database.stat().st_size / 2**20
    files = [database.with_suffix(".ann"), database.with_suffix(".ann.graph")]  # rows, graph
    result["ann_mib"] = sum(f.stat().st_size for f in files if f.exists()) / 2**20
    return result


def phase_search(project: Path, side: str) -> dict[str, Any]:
    """The queries through search_memory's operation, in this fresh process."""
    import _big_store as big
    from memory_bridge.core import _knowledge as kn
    from memory_bridge.stores import KnowledgeFilter, make_embedder, open_knowledge_store

    before = _rss()["VmRSS"]
    settings = _settings(project, 0 if side == "exact" else None)
    embedder = make_embedder(settings)
    queries = big.queries()
    result: dict[str, Any] = {"side": side}

    async def run() -> None:
        started = time.perf_counter()
        store = open_knowledge_store(settings, embedder)
        ctx = kn.KnowledgeContext(store, settings.project_scope, settings.search.max_results)

        async def search(query: str) -> list[str]:
            out = await kn.search_memory(
                ctx,
                query=query,
                datasets=None,
                filters=None,
                score_threshold=None,
                max_results=10,
                best_effort=True,
            )
            return [r.documentId for r in out.records]

        await search(queries[0]["query"])
        result["first_answer_s"] = time.perf_counter() - started
        gc.freeze()  # as the bridge does once started (memory_bridge._serve.settle_heap)
        result["rss_after_first_mib"] = _rss()["VmRSS"]
        times, tops = [], []
        for query in queries:
            began = time.perf_counter()
            tops.append(await search(query["query"]))
            times.append(time.perf_counter() - began)
        result["hybrid"] = {"p50_ms": _pct(times, 0.5), "p95_ms": _pct(times, 0.95), "tops": tops}
        dense_times, dense_tops = [], []
        flt = KnowledgeFilter(scope=settings.project_scope)
        for query in queries:
            began = time.perf_counter()
            page = await store.search(
                list(settings.stores.slots), query["query"], flt, top_k=10, score_threshold=None, mode="dense"
            )
            dense_times.append(time.perf_counter() - began)
            dense_tops.append([hit.document_id for hit in page.hits])
        result["dense"] = {
            "p50_ms": _pct(dense_times, 0.5),
            "p95_ms": _pct(dense_times, 0.95),
            "tops": dense_tops,
        }
        assert embedder is not None
        embed = []
        for query in queries:
            began = time.perf_counter()
            embedder.embed_query(query["query"])
            embed.append(time.perf_counter() - began)
        result["embed_query"] = {"p50_ms": _pct(embed, 0.5), "p95_ms": _pct(embed, 0.95)}
        answers = {}
        for slot in settings.stores.slots:
            for atom in big.atoms():
                if atom["slot"] == slot:
                    found = await store.find(slot, atom["name"])
                    if found is not None:
                        answers[atom["id"]] = found.id
        result["answers"] = [answers.get(q["gold"][0], "") for q in queries]
        await store.close()

    anyio.run(run)
    result["rss_mib"] = _rss()
    result["rss_before_open_mib"] = before
    return result


def _run(*args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, *args], check=True, stdout=subprocess.PIPE, text=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# -- the bridge over stdio -------------------------------------------------------------------


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found += [child, *_descendants(child)]
    return found


async def bridge_run(project: Path, side: str, starts: int) -> dict[str, Any]:
    import _big_store as big

    env = clean_env(None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if side == "exact":
        env["MEMCTL_SEARCH_ANN_THRESHOLD"] = "0"
    script = Path(sys.executable).with_name("memctl")
    params = StdioServerParameters(
        command=str(script), args=["serve", "--project", str(project)], env=env, cwd=str(project)
    )
    queries = [q["query"] for q in big.queries()]
    first: list[float] = []
    result: dict[str, Any] = {"side": side}
    for start in range(starts):
        others = set(_descendants(os.getpid()))
        started = time.perf_counter()
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(Client(params))
            answer = await client.call_tool("search_memory", {"query": queries[0], "bestEffort": True})
            first.append(time.perf_counter() - started)
            assert not answer.is_error, answer.content
            if start == starts - 1:
                times = []
                for query in queries:
                    began = time.perf_counter()
                    out = await client.call_tool("search_memory", {"query": query, "bestEffort": True})
                    times.append(time.perf_counter() - began)
                    assert not out.is_error, out.content
                result["mcp"] = {"p50_ms": _pct(times, 0.5), "p95_ms": _pct(times, 0.95)}
                pids = [p for p in _descendants(os.getpid()) if p not in others]
                result["rss_mib"] = max((_status(p) for p in pids), key=lambda s: s["VmRSS"])
    result["first_answer_s"] = first
    return result


# -- the report ------------------------------------------------------------------------------


def recall(exact: list[list[str]], other: list[list[str]]) -> float:
    hits = sum(len(set(want) & set(got)) for want, got in zip(exact, other, strict=True))
    return hits / sum(len(want) for want in exact)


def answered(tops: list[list[str]], answers: list[str]) -> float:
    return sum(answer in top for top, answer in zip(tops, answers, strict=True)) / len(answers)


def _load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def forget_recalls(project: Path) -> None:
    """Clear the recall stamps searches leave (search_memory records what it returned, and
    age and use weigh in the ranking): each side searches the store as it was written, and
    a rerun measures the same store."""
    with sqlite3.connect(project / ".memory" / "knowledge.db") as conn:
        conn.execute(
            "UPDATE documents SET last_recalled_at = NULL, recall_count = 0"
            " WHERE recall_count != 0 OR last_recalled_at IS NOT NULL"
        )
    conn.close()


def measure(folder: Path, size: int, args: argparse.Namespace) -> dict[str, Any]:
    project = folder / f"p{size}"
    if not (project / ".memory" / "knowledge.db").exists():
        print(f"# {size:,}: writing the store (load {_load()})", file=sys.stderr, flush=True)
        partial = project.with_name(f"{project.name}.partial")  # renamed once whole: a failed build is redone
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(project, ignore_errors=True)
        built = _run(
            "--phase",
            "build",
            "--dir",
            str(folder),
            "--project",
            str(partial),
            "--size",
            str(size),
            "--real",
            str(args.real),
            "--jitter",
            str(args.jitter),
        )
        partial.rename(project)
    else:
        built = {"reused": True}
    row: dict[str, Any] = {"size": size, "build": built, "load": {"start": _load()}}
    print(f"# {size:,}: {built} (load {_load()})", file=sys.stderr, flush=True)
    for side in ("ann", "exact"):
        forget_recalls(project)
        row[side] = _run("--phase", "search", "--project", str(project), "--side", side)
        print(f"# {size:,} {side}: searched (load {_load()})", file=sys.stderr, flush=True)
    if not args.no_bridge:
        for side in ("ann", "exact"):
            forget_recalls(project)
            row[f"bridge_{side}"] = anyio.run(bridge_run, project, side, args.starts)
            print(
                f"# {size:,} bridge {side}: {row[f'bridge_{side}']} (load {_load()})",
                file=sys.stderr,
                flush=True,
            )
    forget_recalls(project)
    answers = row["ann"].pop("answers")
    row["exact"].pop("answers")
    for mode in ("hybrid", "dense"):
        exact, ann = row["exact"][mode].pop("tops"), row["ann"][mode].pop("tops")
        row[f"recall@10 {mode}"] = recall(exact, ann)
        row[f"answer@10 {mode}"] = {"exact": answered(exact, answers), "ann": answered(ann, answers)}
    row["load"]["end"] = _load()
    return row


def report(row: dict[str, Any]) -> str:
    size, ann, exact = row["size"], row["ann"], row["exact"]
    lines = [
        f"{size:,} passages (+240 atoms): {row['build']}",
        f"  load average {row['load']['start']} -> {row['load']['end']}",
        "  side   hybrid p50/p95 ms   dense p50/p95 ms   first answer s   RSS MiB (peak)",
    ]
    for name, side in (("ANN", ann), ("exact", exact)):
        lines.append(
            f"  {name:5}  {side['hybrid']['p50_ms']:7.1f} / {side['hybrid']['p95_ms']:6.1f}"
            f"    {side['dense']['p50_ms']:6.1f} / {side['dense']['p95_ms']:6.1f}"
            f"      {side['first_answer_s']:6.2f}       {side['rss_mib']['VmRSS']:6.0f}"
            f" ({side['rss_mib']['VmHWM']:.0f})"
        )
    lines.append(
        f"  query embedding alone p50/p95 {ann['embed_query']['p50_ms']:.1f}"
        f" / {ann['embed_query']['p95_ms']:.1f} ms"
    )
    for mode in ("hybrid", "dense"):
        found = row[f"answer@10 {mode}"]
        lines.append(
            f"  {mode}: recall@10 ANN vs exact {row[f'recall@10 {mode}']:.3f}; answer in top 10:"
            f" ANN {found['ann']:.3f}, exact {found['exact']:.3f}"
        )
    for side in ("ann", "exact"):
        bridge = row.get(f"bridge_{side}")
        if bridge:
            starts = ", ".join(f"{s:.2f}" for s in bridge["first_answer_s"])
            lines.append(
                f"  bridge {side:5}: spawn -> first search_memory {starts} s (median"
                f" {statistics.median(bridge['first_answer_s']):.2f}); over MCP p50/p95"
                f" {bridge['mcp']['p50_ms']:.1f} / {bridge['mcp']['p95_ms']:.1f} ms;"
                f" RSS {bridge['rss_mib']['VmRSS']:.0f} MiB (peak {bridge['rss_mib']['VmHWM']:.0f})"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dir", type=Path, help="where the stores go (reused if present)")
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--real", type=int, default=20_000, help="passages with the model's own vectors")
    parser.add_argument("--jitter", type=float, default=0.5, help="noise norm of the other passages' vectors")
    parser.add_argument(
        "--starts", type=int, default=3, help="bridge spawns per side (the last one searches)"
    )
    parser.add_argument("--no-bridge", action="store_true", help="skip the bridge over stdio")
    parser.add_argument("--json", type=Path, help="also write every number here")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--project", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase == "vectors":
        print(json.dumps(phase_vectors(args.dir, args.real)))
        return
    if args.phase == "build":
        print(json.dumps(phase_build(args.dir, args.project, args.size, args.real, args.jitter)))
        return
    if args.phase == "search":
        print(json.dumps(phase_search(args.project, args.side)))
        return
    if args.dir is None:
        parser.error("--dir is required")
    args.dir.mkdir(parents=True, exist_ok=True)
    print(
        f"# model vectors: {_run('--phase', 'vectors', '--dir', str(args.dir), '--real', str(args.real))}",
        file=sys.stderr,
        flush=True,
    )
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        row = measure(args.dir, size, args)
        results.append(row)
        print(report(row), flush=True)
        if args.json:
            args.json.write_text(json.dumps({"commit": git_commit(REPO), "rows": results}, indent=2))


if __name__ == "__main__":
    main()
