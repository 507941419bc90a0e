"""Fit the relevance calibration and choose the default threshold; writes the shipped file.

Ingests the engineering atoms into an embedded store with the bundled model, searches the
three probe sets (answerable, on-topic unanswerable, nonsense: bench/_abstention.py) and fits,
on the `fit` half only, one logistic model per kind of evidence:

- `hybrid` (the embedded store): cosine of the best passage, query-term coverage; then, with
  those held as they are (an offset), a correction by the share of the query's idf in words
  the store never holds (`unheld`, weighed by `telling`, how much that tells at the store's
  size) and `telling` itself (its intercept): a store too small to tell keeps the first fit;
- `lexical` (the embedded store without vectors): coverage, then the same correction;
- `keyword` (Dify economy datasets, entries: no store statistics): coverage;
- `dify` (Dify high-quality datasets): Dify's weighted score alone, emulated here by the classical
  0.7 x cosine + 0.3 x BM25 / best.

Positives are the right atoms wherever they rank in the head; negatives are the best hit of
each unanswerable and nonsense probe (what a threshold must stop); the two classes weigh the
same, so a score of 0.5 is an even chance that a hit is an answer rather than the best guess
for a question with none. The default threshold is the one that, on `fit`, stops every
nonsense probe and maximises (answerable right atom in top 3 + unanswerable abstention) / 2
for the hybrid model; each other model's intercept is then shifted so that its own best
cut on `fit` falls on that same threshold (one default serves every store).
Same data, same result: no randomness anywhere.

    nice -n 10 uv run --frozen python bench/calibrate.py            # fit, print, write
    nice -n 10 uv run --frozen python bench/calibrate.py --dry-run  # fit and print only

Then `bench/retrieval.py --abstention-only` reports the figures on the `test` half.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence

import anyio
import numpy as np

from _abstention import BASELINE, CALIBRATED, KEYWORD, Hit, ProbeResult, choose_threshold
from retrieval import REPO, probe_results

CORRECTION = ("unheld", "telling")
TARGET = REPO / "bridge" / "memory_bridge" / "stores" / "relevance.json"
FEATURES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    # model -> (ranking it is fitted on, features, the correction's features fitted after them)
    "hybrid": (CALIBRATED, ("cosine", "coverage"), CORRECTION),
    "lexical": (KEYWORD, ("coverage",), CORRECTION),
    "keyword": (KEYWORD, ("coverage",), ()),
    "dify": (BASELINE, ("store_score",), ()),
}
L2 = 1e-2  # ridge on the weights: keeps the fit finite when the classes separate


def examples(results: Sequence[ProbeResult], label: str, features: Sequence[str]) -> tuple[np.ndarray, ...]:
    """Features, labels and weights (each class summing to the same) of the `fit` half."""
    rows: list[list[float]] = []
    labels: list[float] = []
    for result in results:
        if result.probe.half != "fit":
            continue
        hits = result.hits[label]
        if result.probe.kind == "answerable":
            chosen = [(h, 1.0) for h in hits if h.atom in result.probe.gold]
        else:
            chosen = [(h, 0.0) for h in hits[:1]]
        for hit, value in chosen:
            rows.append([hit.evidence.feature(f) for f in features])
            labels.append(value)
    x, y = np.array(rows), np.array(labels)
    weights = np.where(y == 1, 1.0, y.sum() / max(1.0, (1 - y).sum()))
    return x, y, weights


def fit(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray, offset: np.ndarray | None = None
) -> tuple[float, list[float]]:
    """Weighted, ridge-regularised logistic regression by Newton's method; with `offset`
    (each example's score from a model fitted before), no intercept of its own."""
    design = np.hstack([np.ones((len(x), 1)), x]) if offset is None else x
    base = np.zeros(len(x)) if offset is None else offset
    w = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(base + design @ w)))
        hessian = design.T @ (design * (weights * p * (1 - p))[:, None]) + L2 * np.eye(len(w))
        step = np.linalg.solve(hessian, design.T @ (weights * (p - y)) + L2 * w)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return (0.0, [float(v) for v in w]) if offset is not None else (float(w[0]), [float(v) for v in w[1:]])


def scorer(intercept: float, weights: Sequence[float], features: Sequence[str]) -> Callable[[Hit], float]:
    def score(hit: Hit) -> float:
        z = intercept + sum(w * hit.evidence.feature(f) for w, f in zip(weights, features, strict=True))
        return 1 / (1 + math.exp(-z))

    return score


def calibrate(results: Sequence[ProbeResult]) -> dict[str, object]:
    fitted: dict[str, tuple[float, list[float], tuple[str, ...]]] = {}
    for model, (label, features, correction) in FEATURES.items():
        x, y, weights = examples(results, label, features)
        intercept, first = fit(x, y, weights)
        if correction:
            offset = intercept + x @ np.array(first)
            _, second = fit(examples(results, label, correction)[0], y, weights, offset)
            first, features = first + second, features + correction
        fitted[model] = (intercept, first, features)
    threshold = choose_threshold(results, CALIBRATED, scorer(*fitted["hybrid"]))
    models: dict[str, object] = {}
    for model, (intercept, weights, features) in fitted.items():
        if model != "hybrid":  # its best cut on `fit` moved onto the one default threshold
            best = choose_threshold(results, FEATURES[model][0], scorer(intercept, weights, features))
            intercept += _logit(threshold) - _logit(best)
        models[model] = {
            "features": list(features),
            "weights": [round(w, 4) for w in weights],
            "intercept": round(intercept, 4),
        }
    return {
        "models": models,
        "threshold": threshold,
        "fitted_on": {
            kind: sum(r.probe.kind == kind for r in results if r.probe.half == "fit")
            for kind in ("answerable", "unanswerable", "nonsense")
        },
        "fitted_by": "bench/calibrate.py",
    }


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dry-run", action="store_true", help=f"print the fit, do not write {TARGET.name}")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = anyio.run(probe_results)
    shipped = calibrate(results)
    text = json.dumps(shipped, indent=2) + "\n"
    print(text, end="")
    if not args.dry_run:
        TARGET.write_text(text, encoding="utf-8")
        default = shipped["threshold"]
        print(f"wrote {TARGET.relative_to(REPO)}; set search_score_threshold's default to {default}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
