"""Secret redaction: memctl's redactor beside the one before issue 13 and detect-secrets.

uv run --frozen python bench/redaction.py                 # 2000 saves per redactor
uv run --frozen python bench/redaction.py --saves 5000 --json redaction.json

Each redactor gets the corpus of `tests/adversarial/secret_corpus.py`:
- recall: the share of secret formats whose secret is gone from the redacted line;
- false positives: the share of harmless look-alikes that the redactor changed;
- cost per save: the time to redact every stored string of one typical save (an entry:
  a title, a body of about 1.6 KB of notes that mention keys, tokens and passwords holding
  one corpus line, three tags, a source and a project; a document: a name, the same text
  and its metadata values), p50 and p95 over `--saves` saves, after a warm-up;
- worst hostile body: the longest time over bodies of 256 KiB (memory_set's limit) built
  to make a rule backtrack (a key header or a `mysql` repeated on one line, and so on):
  every rule must stay linear, as redaction runs on every write. detect-secrets gets
  them only with `--hostile-all` (it is quadratic on some of them: minutes per body).

Redactors:
- `baseline`: memctl's redactor before issue 13 (`bench/_redact_baseline.py`);
- `detect-secrets`: Yelp's rule set (every default plugin and filter, its line scanner
  run over the text as over a Markdown or a YAML file, its best type here), each reported
  secret replaced by [REDACTED];
- `memctl`: `memory_bridge.core.redact`, what every write path applies to every field;
- `memctl + detect-secrets`: both, one after the other (is detect-secrets worth running
  at save time? this row answers it).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _env import git_commit
from _redact_baseline import redact as baseline_redact

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.adversarial.secret_corpus import LOOKALIKES, SECRETS  # noqa: E402

from memory_bridge.core import redact as memctl_redact  # noqa: E402

Redactor = Callable[[str], str]
PROSE = (  # names secrets without holding one, so every rule gated on those words runs
    "Deploys go blue-green through the ingress; the API key and the bridge token rotate monthly, "
    "the staging database password lives in the vault, and the smoke suite runs before traffic moves. "
)


def detect_secrets_redactor(filename: str) -> Redactor:
    """detect-secrets' line scanner with its default plugins and filters, the text taken
    as a file of this name (its keyword rules differ by file type)."""
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import default_settings

    def redact(text: str) -> str:
        with default_settings():
            lines = list(enumerate(text.splitlines(), start=1))
            found = {s.secret_value for s in _process_line_based_plugins(lines, filename=filename)}
        for value in sorted((v for v in found if v), key=len, reverse=True):
            text = text.replace(value, "[REDACTED]")
        return text

    return redact


def redactors() -> dict[str, Redactor]:
    detect = detect_secrets_redactor("memory.yaml")  # its best file type on this corpus
    return {
        "baseline": baseline_redact,
        "detect-secrets (as .md)": detect_secrets_redactor("memory.md"),
        "detect-secrets (as .yaml)": detect,
        "memctl": memctl_redact,
        "memctl + detect-secrets": lambda text: detect(memctl_redact(text)),
    }


Save = tuple[str, ...]  # every stored string of one save


def saves(count: int) -> list[Save]:
    """Typical saves, an entry and a document in turn: a few paragraphs of notes with one
    corpus line, and the short fields around them."""
    lines = [s.text for s in SECRETS] + LOOKALIKES
    made: list[Save] = []
    for i in range(count):
        body = f"{PROSE * 4}\n{lines[i % len(lines)]}\n{PROSE * 4}"
        if i % 2:
            made.append(
                ("deploy-runbook.md", body, "project-lore", "ops", "release", "deploy", "", "", "app")
            )
        else:
            made.append(("Deploy runbook", body, "ops", "release", "deploy", "claude-code", "app"))
    return made


HOSTILE_BYTES = 262_144
HOSTILE_UNITS = (
    "mysql ",
    "-----BEGIN PRIVATE KEY-----\n",
    "machine x login y ",
    "Bearer aaaaaaaaaaaa ",
    "redis://a:",
    'password="',
    "password=${",
    "token key secret pass ",
    "Basic AAAAAAAA",
    "authorization: bearer ",
    "--password ",
    "<password>a",
    "eyJa.eyJa.",
    "1234567890:AA",
    "a",
)


def hostile_bodies() -> list[str]:
    return [unit * (HOSTILE_BYTES // len(unit)) for unit in HOSTILE_UNITS]


def measure(redact: Redactor, bodies: list[Save], hostile: list[str]) -> dict[str, Any]:
    missed = [s.name for s in SECRETS if s.secret in redact(s.text)]
    changed = [text for text in LOOKALIKES if redact(text) != text]
    for fields in bodies[:50]:
        [redact(field) for field in fields]
    timings = []
    for fields in bodies:
        started = time.perf_counter()
        [redact(field) for field in fields]
        timings.append(time.perf_counter() - started)
    timings.sort()
    worst: float | None = None  # not measured
    for body in hostile:
        started = time.perf_counter()
        redact(body)
        worst = max(worst or 0.0, time.perf_counter() - started)
    return {
        "recall": round(1 - len(missed) / len(SECRETS), 3),
        "false_positive_rate": round(len(changed) / len(LOOKALIKES), 3),
        "missed": missed,
        "false_positives": changed,
        "p50_us": round(statistics.median(timings) * 1e6, 1),
        "p95_us": round(timings[int(len(timings) * 0.95)] * 1e6, 1),
        "worst_hostile_ms": None if worst is None else round(worst * 1e3, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=2000)
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    parser.add_argument(
        "--hostile-all",
        action="store_true",
        help="give the hostile bodies to detect-secrets too (it is quadratic on some: many minutes)",
    )
    args = parser.parse_args()
    bodies = saves(args.saves)
    hostile = hostile_bodies()
    results = {
        name: measure(redact, bodies, hostile if args.hostile_all or "detect" not in name else [])
        for name, redact in redactors().items()
    }
    report = {
        "commit": git_commit(ROOT),
        "python": platform.python_version(),
        "secret_formats": len(SECRETS),
        "lookalikes": len(LOOKALIKES),
        "saves": args.saves,
        "save_bytes": sum(len(field) for field in bodies[0]),
        "results": results,
    }
    print(
        f"redaction, {len(SECRETS)} secret formats, {len(LOOKALIKES)} look-alikes, {args.saves} saves "
        f"of ~{report['save_bytes']} B (commit {report['commit']}, Python {report['python']})"
    )
    print(
        f"{'redactor':<26} {'recall':>7} {'false pos':>10} {'p50 us/save':>12} {'p95 us/save':>12} "
        f"{'worst hostile ms':>17}"
    )
    for name, row in results.items():
        print(
            f"{name:<26} {row['recall']:>7.1%} {row['false_positive_rate']:>10.1%} "
            f"{row['p50_us']:>12} {row['p95_us']:>12} {row['worst_hostile_ms'] or '-':>17}"
        )
    for name, row in results.items():
        if row["missed"]:
            print(f"{name} misses: {', '.join(row['missed'])}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
