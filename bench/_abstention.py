"""Does search say "nothing found" when nothing fits? Probes and their figures.

Three probe sets over the engineering atoms: the answerable questions (queries.jsonl), on-topic
questions the atoms do not answer (unanswerable.jsonl) and nonsense (nonsense.jsonl: gibberish,
stop words, word salad). Each probe is searched once per ranking on one ingested store; every
hit of the head (top WINDOW, no threshold) is kept with its evidence, so any threshold (and a
refitted calibration, bench/calibrate.py) can be evaluated without searching again.

Every probe belongs to one fixed half (`half`, by a hash of its id): the calibration is fitted
and the default threshold chosen on `fit`; the figures that count are those on `test`.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_bridge.stores import KnowledgeFilter, SearchMode
from memory_bridge.stores._relevance import Evidence, coverage
from memory_bridge.stores.sqlite import Ranking, SqliteKnowledgeStore
from memory_bridge.stores.sqlite._knowledge_relevance import WINDOW

__all__ = [
    "BASELINE",
    "CALIBRATED",
    "KEYWORD",
    "KINDS",
    "Hit",
    "Probe",
    "ProbeResult",
    "abstention_figures",
    "abstention_report",
    "choose_threshold",
    "envelope",
    "half",
    "load_probes",
    "run_probes",
]

KINDS = ("answerable", "unanswerable", "nonsense")
CALIBRATED = "memctl default (calibrated, adaptive fusion, second hop, second stage)"
BASELINE = "classical BM25+MiniLM (0.7 x cosine + 0.3 x BM25 / best, raw score)"
KEYWORD = "keyword only (calibrated, no vectors)"
_RANKINGS: dict[str, tuple[Ranking, SearchMode]] = {
    CALIBRATED: (Ranking(), "hybrid"),
    BASELINE: (Ranking(fusion="weighted", second_hop=False, rerank=False, calibrated=False), "hybrid"),
    KEYWORD: (Ranking(), "keyword"),
}


def half(probe_id: str) -> str:
    """The fixed half a probe belongs to: `fit` (calibration, threshold) or `test` (report)."""
    return "fit" if hashlib.sha256(probe_id.encode()).digest()[0] % 2 == 0 else "test"


@dataclass(frozen=True)
class Probe:
    id: str
    query: str
    kind: str  # one of KINDS
    gold: tuple[str, ...] = ()

    @property
    def half(self) -> str:
        return half(self.id)


@dataclass(frozen=True)
class Hit:
    atom: str | None
    score: float  # the ranking's own score
    evidence: Evidence  # with store_score the raw score of an uncalibrated ranking


@dataclass
class ProbeResult:
    probe: Probe
    hits: dict[str, list[Hit]] = field(default_factory=dict)  # ranking label -> head, best first


def load_probes(data: Path, read: Callable[[Path], list[dict[str, Any]]]) -> list[Probe]:
    """The three sets, from `data` (queries.jsonl, unanswerable.jsonl, nonsense.jsonl)."""
    probes = [
        Probe(str(r["id"]), str(r["query"]), "answerable", tuple(r["gold"]))
        for r in read(data / "queries.jsonl")
    ]
    probes += [
        Probe(str(r["id"]), str(r["query"]), "unanswerable") for r in read(data / "unanswerable.jsonl")
    ]
    probes += [Probe(str(r["id"]), str(r["query"]), "nonsense") for r in read(data / "nonsense.jsonl")]
    return probes


async def run_probes(
    store: SqliteKnowledgeStore,
    probes: Sequence[Probe],
    slots: Sequence[str],
    scope: str,
    by_name: dict[tuple[str, str], str],
) -> list[ProbeResult]:
    """Every probe under every ranking, the head with evidence (raw rankings get theirs here)."""
    results = [ProbeResult(p) for p in probes]
    default = store.ranking
    try:
        for label, (ranking, mode) in _RANKINGS.items():
            store.ranking = ranking
            for result in results:
                page = await store.search(
                    list(slots), result.probe.query, KnowledgeFilter(scope=scope),
                    top_k=WINDOW, score_threshold=None, mode=mode,
                )  # fmt: skip
                raw = coverage(result.probe.query, [(h.document_name, h.content) for h in page.hits])
                result.hits[label] = [
                    Hit(
                        by_name.get((h.slot, h.document_name)),
                        h.score,
                        h.evidence if h.evidence is not None else Evidence(share, None, h.score),
                    )
                    for h, share in zip(page.hits, raw, strict=True)
                ]
    finally:
        store.ranking = default
    return results


@dataclass(frozen=True)
class Figures:
    n: dict[str, int]
    abstain: dict[str, float]  # kind -> share of probes with no hit at the threshold
    top3: float  # answerable: the right atom among the first 3 hits at the threshold
    recall: dict[int, float]  # answerable, no threshold
    mrr: float


def envelope(scores: Sequence[float]) -> list[float]:
    """Each score raised to the best at its rank or below (as the embedded store scores)."""
    out: list[float] = []
    best = 0.0
    for value in reversed(scores):
        best = max(best, value)
        out.append(best)
    return out[::-1]


def abstention_figures(
    results: Sequence[ProbeResult], label: str, threshold: float | None, part: str | None,
    score: Callable[[Hit], float] | None = None,
) -> Figures:  # fmt: skip
    """The figures of one ranking at `threshold` (None: none) on half `part` (None: all);
    `score` re-scores each hit (a refitted calibration; the order stays)."""
    chosen = [r for r in results if part is None or r.probe.half == part]

    def ranked(result: ProbeResult) -> list[Hit]:
        return result.hits[label]

    def kept(result: ProbeResult) -> list[Hit]:
        hits = ranked(result)
        values = [h.score for h in hits] if score is None else envelope([score(h) for h in hits])
        return [h for h, v in zip(hits, values, strict=True) if threshold is None or v >= threshold]

    def of(kind: str) -> list[ProbeResult]:
        return [r for r in chosen if r.probe.kind == kind]

    answerable = of("answerable")

    def rr(result: ProbeResult) -> float:
        atoms = [h.atom for h in ranked(result)[:10]]
        return next((1 / i for i, a in enumerate(atoms, 1) if a in result.probe.gold), 0.0)

    return Figures(
        n={kind: len(of(kind)) for kind in KINDS},
        abstain={
            kind: statistics.fmean(not kept(r) for r in of(kind)) if of(kind) else 0.0 for kind in KINDS
        },
        top3=statistics.fmean(any(h.atom in r.probe.gold for h in kept(r)[:3]) for r in answerable),
        recall={
            k: statistics.fmean(
                len(set(r.probe.gold) & {h.atom for h in ranked(r)[:k]}) / len(r.probe.gold)
                for r in answerable
            )
            for k in (3, 5, 10)
        },
        mrr=statistics.fmean(rr(r) for r in answerable),
    )


THRESHOLDS = [round(0.05 + 0.01 * i, 2) for i in range(91)]


def choose_threshold(
    results: Sequence[ProbeResult], label: str, score: Callable[[Hit], float] | None = None
) -> float:
    """The threshold that stops every nonsense probe of `fit` and maximises (answerable right
    atom in top 3 + unanswerable abstention) / 2 there; the lowest such."""
    best, chosen = -1.0, THRESHOLDS[-1]
    for threshold in THRESHOLDS:
        f = abstention_figures(results, label, threshold, "fit", score)
        if f.abstain["nonsense"] < 1.0:
            continue
        value = (f.top3 + f.abstain["unanswerable"]) / 2
        if value > best + 1e-12:
            best, chosen = value, threshold
    return chosen


def abstention_report(rows: Sequence[tuple[str, str, Figures]], title: str) -> str:
    """A table: one row per (ranking, threshold label)."""
    head = (
        "| ranking | threshold | abstains: nonsense | unanswerable | answerable "
        "| answerable right doc in top 3 | R@3 | R@10 | MRR@10 |"
    )
    lines = [title, "", head, "|---|---|---|---|---|---|---|---|---|"]
    for label, threshold, f in rows:
        lines.append(
            f"| {label} | {threshold} | {f.abstain['nonsense']:.0%} of {f.n['nonsense']} "
            f"| {f.abstain['unanswerable']:.0%} of {f.n['unanswerable']} "
            f"| {f.abstain['answerable']:.0%} of {f.n['answerable']} | {f.top3:.1%} "
            f"| {f.recall[3]:.3f} | {f.recall[10]:.3f} | {f.mrr:.3f} |"
        )
    return "\n".join(lines)
