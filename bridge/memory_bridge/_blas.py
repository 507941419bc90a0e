"""One BLAS thread for the process's matrix products.

numpy's OpenBLAS runs a product on every core by default, and its extra threads spin
for a while after each one. A search's products are small (a query against a few
thousand passages, or against the exact index below `ann_threshold`), so the extra
threads bought no latency here and burned the other core meanwhile: over MCP at 100k
passages the bridge spent 35-49 ms of CPU a search with them and 22-29 ms with one
thread, at the same p50 and p95 within the runs' spread (bench/README, "One BLAS
thread"). That core is what bulk intake, another session's calls and the clients run on.
"""

from __future__ import annotations

import os

__all__ = ["one_blas_thread"]

_VARIABLE = "OPENBLAS_NUM_THREADS"


def one_blas_thread() -> None:
    """Have numpy's OpenBLAS use one thread, unless the environment already says how many.
    OpenBLAS reads the setting when numpy loads, so call this before (the bridge and the
    CLI load numpy only when they first need vectors); child processes inherit it."""
    os.environ.setdefault(_VARIABLE, "1")
