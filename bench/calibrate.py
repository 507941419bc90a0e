"""Fit the relevance calibration and choose the default threshold; writes the shipped file.

Ingests the engineering atoms into an embedded store with the bundled model, searches the
three probe sets (answerable, on-topic unanswerable, nonsense: bench/_abstention.py) and fits,
on the `fit` half only, one logistic model per kind of evidence:

- `hybrid` (the embedded store): cosine of the best passage, query-term coverage;
- `keyword` (no vectors, Dify economy datasets, entries): coverage;
- `dify` (Dify high-quality datasets): Dify's weighted score alone, emulated here by the classical
  0.7 x cosine + 0.3 x BM25 / best.

Positives are the right atoms wherever they rank in the head; negatives are the best hit of
each unanswerable and nonsense probe (what a threshold must stop); the two classes weigh the
same, so a score of 0.5 is an even chance that a hit is an answer rather than the best guess
for a question with none. The default threshold is the one that, on `fit`, stops every
nonsense probe and maximises (answerable right atom in top 3 + unanswerable abstention) / 2.
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

TARGET = REPO / "bridge" / "memory_bridge" / "stores" / "relevance.json"
FEATURES: dict[str, tuple[str, tuple[str, ...]]] = {  # model -> (ranking it is fitted on, features)
    "hybrid": (CALIBRATED, ("cosine", "coverage")),
    "keyword": (KEYWORD, ("coverage",)),
    "dify": (BASELINE, ("store_score",)),
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


def fit(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[float, list[float]]:
    """Weighted, ridge-regularised logistic regression by Newton's method."""
    design = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-design @ w))
        hessian = design.T @ (design * (weights * p * (1 - p))[:, None]) + L2 * np.eye(len(w))
        step = np.linalg.solve(hessian, design.T @ (weights * (p - y)) + L2 * w)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return float(w[0]), [float(v) for v in w[1:]]


def scorer(intercept: float, weights: Sequence[float], features: Sequence[str]) -> Callable[[Hit], float]:
    def score(hit: Hit) -> float:
        z = intercept + sum(w * hit.evidence.feature(f) for w, f in zip(weights, features, strict=True))
        return 1 / (1 + math.exp(-z))

    return score


def calibrate(results: Sequence[ProbeResult]) -> dict[str, object]:
    models: dict[str, object] = {}
    scores: dict[str, Callable[[Hit], float]] = {}
    for model, (label, features) in FEATURES.items():
        intercept, weights = fit(*examples(results, label, features))
        intercept, weights = round(intercept, 4), [round(w, 4) for w in weights]
        models[model] = {"features": list(features), "weights": weights, "intercept": intercept}
        scores[model] = scorer(intercept, weights, features)
    threshold = choose_threshold(results, CALIBRATED, scores["hybrid"])
    fitted = [r for r in results if r.probe.half == "fit"]
    return {
        "models": models,
        "threshold": threshold,
        "fitted_on": {
            kind: sum(r.probe.kind == kind for r in fitted)
            for kind in ("answerable", "unanswerable", "nonsense")
        },
        "fitted_by": "bench/calibrate.py",
    }


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
