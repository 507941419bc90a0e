"""Fit the embedded store's second stage (issue 34) and write `rerank.json`.

The three eval sets (engineering atoms, long conversations, dialogues) are ingested into
fresh embedded stores with the bundled model; every question is searched once and the
head's evidence (stores/sqlite/_knowledge_rerank.py) recorded with which candidates answer
it. A linear model is fitted listwise (softmax over each question's candidates, the right
ones the targets) on the **tune** half of every set, each set weighing the same, and the
result is reported on the **test** half beside the fusion's own order from the same run.
No randomness: the same data gives the same file.

    nice -n 10 uv run --frozen python bench/rerank_fit.py            # fit, report, write the model
    nice -n 10 uv run --frozen python bench/rerank_fit.py --dry-run  # report only
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from _variants import half
from memory_bridge.stores.sqlite import _knowledge, _knowledge_rerank
from memory_bridge.stores.sqlite._knowledge_rerank import FEATURES
from retrieval import (
    DATA,
    EMBED_THREADS,
    CachingEmbedder,
    IngestTiming,
    eval_set,
    ingest,
    lazy_minilm,
    load_atoms,
    load_queries,
    open_store,
    search,
)

MODEL = Path(__file__).resolve().parents[1] / "bridge/memory_bridge/stores/sqlite/rerank.json"
ITERATIONS, STEP, L2 = 400, 0.3, 1e-3


@dataclass
class Question:
    set_name: str
    id: str
    rows: np.ndarray  # the head's feature rows, in fused order
    right: np.ndarray  # 1.0 where the candidate answers the question


async def _questions(
    name: str, atoms_path: Path, queries_path: Path, embedder: CachingEmbedder
) -> list[Question]:
    atoms = load_atoms(atoms_path)
    chosen = eval_set(name, atoms, load_queries(queries_path, atoms))
    recorded: list[_knowledge_rerank.Evidence] = []

    def spy(conn: sqlite3.Connection, matches: Any, rankings: _knowledge_rerank.Rankings) -> Any:
        recorded.append(_knowledge_rerank.evidence(conn, matches, rankings))
        return rankings.fused

    original = _knowledge.rerank
    _knowledge.rerank = spy  # type: ignore[assignment]
    out = []
    try:
        with tempfile.TemporaryDirectory(prefix="memctl-rerank-") as directory:
            store = open_store(Path(directory), embedder)
            try:
                print(f"{name}: ingesting {len(chosen.writes)} documents", file=sys.stderr, flush=True)
                await ingest(store, chosen.writes, IngestTiming())
                with sqlite3.connect(store.path) as conn:
                    atom_of = {
                        int(rowid): chosen.ids.get((slot, document))
                        for rowid, slot, document in conn.execute(
                            "SELECT d.rowid, s.name, d.name FROM documents AS d"
                            " JOIN slots AS s ON s.id = d.slot_id"
                        )
                    }
                for question_id, text, gold, _ in chosen.queries:
                    recorded.clear()
                    await search(store, text, "hybrid")
                    found = recorded[0]
                    right = np.array([1.0 if atom_of.get(d) in gold else 0.0 for d in found.documents])
                    out.append(Question(name, question_id, found.rows, right))
            finally:
                await store.close()
    finally:
        _knowledge.rerank = original  # type: ignore[assignment]
    return out


def fit(questions: Sequence[Question]) -> dict[str, Any]:
    """Listwise logistic (softmax) fit on the questions whose candidates hold a right one."""
    usable = [q for q in questions if q.right.sum() > 0]
    per_set = {name: sum(1 for q in usable if q.set_name == name) for name in {q.set_name for q in usable}}
    stacked = np.vstack([q.rows for q in usable])
    mean, scale = stacked.mean(0), stacked.std(0) + 1e-9
    groups = [((q.rows - mean) / scale, q.right / q.right.sum(), 1.0 / per_set[q.set_name]) for q in usable]
    total = sum(weight for *_, weight in groups)
    beta = np.zeros(stacked.shape[1])
    first, second = np.zeros_like(beta), np.zeros_like(beta)
    for step in range(1, ITERATIONS + 1):  # Adam on the mean cross-entropy
        gradient = L2 * beta
        for rows, target, weight in groups:
            logits = rows @ beta
            chance = np.exp(logits - logits.max())
            chance /= chance.sum()
            gradient += (weight / total) * (rows.T @ (chance - target))
        first = 0.9 * first + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient**2
        beta -= STEP * (first / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
    return {
        "features": list(FEATURES),
        "mean": [round(float(v), 6) for v in mean],
        "scale": [round(float(v), 6) for v in scale],
        "weights": [round(float(v), 6) for v in beta],
        "fitted_on": per_set,
        "fitted_by": "bench/rerank_fit.py",
    }


def _metrics(orders: Sequence[np.ndarray], questions: Sequence[Question]) -> tuple[float, float]:
    recall, reciprocal = [], []
    for order, q in zip(orders, questions, strict=True):
        top = q.right[order[:10]]
        total = q.right.sum()
        recall.append(float(top.sum() / total) if total else 0.0)
        reciprocal.append(next((1.0 / (i + 1) for i, hit in enumerate(top) if hit), 0.0))
    return statistics.fmean(recall), statistics.fmean(reciprocal)


def report(model: dict[str, Any], questions: Sequence[Question]) -> str:
    """R@10 / MRR@10 of the head in fused order and re-ordered, per set and half.

    Recall counts the right candidates within the head (a right document the head missed
    counts for neither order): the full pipeline's figures come from bench/retrieval.py."""
    mean, scale, weights = (np.array(model[k]) for k in ("mean", "scale", "weights"))
    lines = [
        "| set | half | questions | fused order R@10 / MRR@10 | re-ordered R@10 / MRR@10 |",
        "|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(q.set_name for q in questions):
        for part in ("test", "tune"):
            chosen = [q for q in questions if q.set_name == name and half(q.id) == part]
            fused = [np.arange(len(q.right)) for q in chosen]
            ordered = [np.argsort(-(((q.rows - mean) / scale) @ weights), kind="stable") for q in chosen]
            (fr, fm), (rr, rm) = _metrics(fused, chosen), _metrics(ordered, chosen)
            lines.append(f"| {name} | {part} | {len(chosen)} | {fr:.3f} / {fm:.3f} | {rr:.3f} / {rm:.3f} |")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> None:
    embedder = CachingEmbedder(lazy_minilm(EMBED_THREADS))
    embedder.embed_query("warm up")
    questions: list[Question] = []
    for name, directory in (
        ("engineering atoms", DATA),
        ("conversations", DATA / "conversations"),
        ("dialogues", DATA / "dialogues"),
    ):
        questions += await _questions(name, directory, embedder)
    model = fit([q for q in questions if half(q.id) == "tune"])
    print(report(model, questions))
    if not args.dry_run:
        MODEL.write_text(json.dumps(model, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {MODEL}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dry-run", action="store_true", help="report the fit, do not write rerank.json")
    anyio.run(run, parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
