"""Benchmark `memctl backup` and `memctl restore` at 100k entries with history.

Fills an embedded store with N entries (each with 3 revisions of history; every 20th
deleted, every 50th expiring) through the store's import, then times, each as a real
`python -m memctl` subprocess:

  backup sqlite     the embedded project to an archive
  restore sqlite    the archive into a fresh embedded project
  restore valkey    the archive into a fresh Valkey database (valkey-server, loopback)
  backup valkey     that Valkey database to an archive

beside two baselines from the same run on the same data: SQLite's online backup API
copying entries.db (a raw copy, no format, no checks) and `iterdump()` writing the
database as SQL text (sqlite3's `.dump`). Target: each memctl step <= 60 s (wall).
CPU seconds are printed beside wall seconds: on a shared machine they show the work
done, where wall time also shows the wait for a core.

    nice -n 10 uv run --frozen python bench/backup.py            # 100k entries
    nice -n 10 uv run --frozen python bench/backup.py --entries 10000 --json out.json
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from _env import clean_env, git_commit
from _fill import import_entries
from _servers import valkey_server

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 60.0


def _records(n: int) -> Any:
    from memory_bridge.stores import Entry, EntryRecord

    stamp = "2026-01-01T00:00:00.000Z"
    for i in range(n):
        id = f"e-{i:06}"
        history = tuple(
            json.dumps(
                {
                    "title": f"Entry {i} v{rev}",
                    "body": f"Body of entry {i}, revision {rev}. " * 8,
                    "type": "decision",
                    "tags": ["bench", f"t{i % 50}"],
                    "source": "bench",
                    "project": f"p{i % 3}",
                    "updated": stamp,
                    "operation": "created" if rev == 1 else "modified",
                    "rev": rev,
                }
            )
            for rev in (3, 2, 1)
        )
        deleted = i % 20 == 0
        expires = None if deleted or i % 50 != 1 else time.time() + 86_400
        entry = None
        if not deleted:
            entry = Entry(
                id, f"Entry {i} v3", f"Body of entry {i}, revision 3. " * 8, "decision",
                ("bench", f"t{i % 50}"), "bench", f"p{i % 3}", stamp, stamp, i % 7,
                "86400" if expires else "",
            )  # fmt: skip
        yield EntryRecord(id, entry, 3, history, expires)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _memctl(*args: str, env: dict[str, str] | None = None) -> tuple[float, float, dict[str, Any]]:
    """Wall and CPU seconds of one memctl subprocess, and its JSON report."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "memctl", *args, "--json"],
        env={**clean_env(), **(env or {})},
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    cpu = _children_cpu() - cpu
    if done.returncode != 0:
        raise RuntimeError(f"memctl {' '.join(args)} failed ({done.returncode}): {done.stdout}{done.stderr}")
    return elapsed, cpu, dict(json.loads(done.stdout))


def _timed(work: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of work done in this process."""
    cpu, started = time.process_time(), time.perf_counter()
    work()
    return time.perf_counter() - started, time.process_time() - cpu


def _backup_api(db: Path, out: Path) -> None:
    with sqlite3.connect(db) as source, sqlite3.connect(out) as target:
        source.backup(target)


def _iterdump(db: Path, out: Path) -> None:
    with sqlite3.connect(db) as source, out.open("w") as handle:
        for line in source.iterdump():
            handle.write(line + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    options = parser.parse_args()
    n = options.entries
    rows: list[tuple[str, float, float, str]] = []  # step, wall s, CPU s, note
    with tempfile.TemporaryDirectory(prefix="memctl-bench-backup-") as tmp:
        base = Path(tmp)
        source = base / "source"
        print(f"filling {n} entries (3 revisions each) ...", file=sys.stderr, flush=True)
        fill = time.perf_counter()
        anyio.run(import_entries, source, _records(n))
        print(f"  filled in {time.perf_counter() - fill:.1f} s", file=sys.stderr, flush=True)
        db = source / ".memory" / "entries.db"
        size_mb = db.stat().st_size / 1e6

        wall, cpu = _timed(lambda: _backup_api(db, base / "copy.db"))
        rows.append(("baseline: sqlite3 backup API (copy)", wall, cpu, ""))
        wall, cpu = _timed(lambda: _iterdump(db, base / "dump.sql"))
        rows.append(("baseline: sqlite3 iterdump (.dump)", wall, cpu, ""))

        archive = base / "sqlite.tar.gz"
        for fresh in ("restored", "kv"):  # a project is an existing directory
            (base / fresh).mkdir()
        steps: list[tuple[str, list[str], dict[str, str] | None]] = [
            ("backup (embedded)", ["backup", "--project", str(source), "-o", str(archive)], None),
            (
                "restore (embedded)",
                ["restore", "--project", str(base / "restored"), "-i", str(archive)],
                None,
            ),
        ]
        with valkey_server() as server:
            on_valkey = {"MEMCTL_ENTRY_STORE": server.url()}
            kv = str(base / "kv")
            steps += [
                ("restore (valkey)", ["restore", "--project", kv, "-i", str(archive)], on_valkey),
                ("backup (valkey)", ["backup", "--project", kv, "-o", str(base / "kv.tgz")], on_valkey),
            ]
            for name, args, env in steps:
                print(f"memctl {name} ...", file=sys.stderr, flush=True)
                wall, cpu, report = _memctl(*args, env=env)
                if "mode" in report:
                    assert report["ok"], report
                    note = f"{report['entries']['written']} written, verified"
                else:
                    note = f"{report['entries']} records"
                rows.append((f"memctl {name}", wall, cpu, note))
        archive_mb = archive.stat().st_size / 1e6

    print(
        f"\nbackup and restore, {n} entries with 3 revisions each (entries.db {size_mb:.0f} MB, "
        f"archive {archive_mb:.1f} MB); commit {git_commit(ROOT)}, Python {platform.python_version()}\n"
    )
    print(f"{'step':<40} {'wall s':>8} {'CPU s':>8}  {'target':>8}  result  note")
    print(f"{'-' * 40} {'-' * 8} {'-' * 8}  {'-' * 8}  ------  ----")
    for name, wall, cpu, note in rows:
        memctl_step = name.startswith("memctl")
        target = f"<= {TARGET_SECONDS:.0f}" if memctl_step else ""
        verdict = ("PASS" if wall <= TARGET_SECONDS else "FAIL") if memctl_step else ""
        print(f"{name:<40} {wall:>8.2f} {cpu:>8.2f}  {target:>8}  {verdict:<6}  {note}")
    if options.json:
        options.json.write_text(
            json.dumps(
                {
                    "entries": n,
                    "entries_db_mb": size_mb,
                    "archive_mb": archive_mb,
                    "commit": git_commit(ROOT),
                    "python": platform.python_version(),
                    "steps": [
                        {"step": s, "wall_seconds": w, "cpu_seconds": c, "note": note}
                        for s, w, c, note in rows
                    ],
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
