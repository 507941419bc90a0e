"""bench/knowledge_scale.py end to end on a tiny store: the bench runs against today's
settings and store (it broke once when the settings were grouped and nothing ran it), and a
build that failed part way is redone rather than reused, and the searches leave no recall
stamps behind (they weigh in the ranking: a rerun would measure another store)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "knowledge_scale.py"


def run_scale(folder: Path, home: Path) -> dict[str, object]:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    out = folder / "result.json"
    argv = ["--dir", str(folder), "--sizes", "300", "--real", "40", "--starts", "1", "--json", str(out)]
    subprocess.run([sys.executable, str(BENCH), *argv], check=True, env=env, capture_output=True, text=True)
    rows = json.loads(out.read_text())
    assert isinstance(rows, dict) and len(rows["rows"]) == 1
    row: dict[str, object] = rows["rows"][0]
    return row


def test_a_tiny_store_is_built_searched_and_reported(tmp_path: Path) -> None:
    folder = tmp_path / "scale"
    (folder / "p300" / ".memory").mkdir(parents=True)  # what a build that crashed left behind
    row = run_scale(folder, tmp_path / "home")
    assert row["size"] == 300 and row["build"] != {"reused": True}
    database = folder / "p300" / ".memory" / "knowledge.db"
    with sqlite3.connect(database) as conn:
        stamped = conn.execute("SELECT count(*) FROM documents WHERE recall_count > 0").fetchone()[0]
    conn.close()
    assert stamped == 0, f"the bench left {stamped} documents stamped as recalled"
    # 540 passages sit below the ANN threshold: both sides are the same exact search.
    assert row["recall@10 hybrid"] == row["recall@10 dense"] == 1.0
    answered = row["answer@10 hybrid"]
    assert isinstance(answered, dict)
    assert answered["ann"] == answered["exact"] > 0.8  # the 240 questions find their own atoms
    for side in ("ann", "exact"):
        searched = row[side]
        assert isinstance(searched, dict)
        assert 0 < searched["hybrid"]["p50_ms"] <= searched["hybrid"]["p95_ms"]
