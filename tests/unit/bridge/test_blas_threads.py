"""The bridge and the CLI run numpy's matrix products on one BLAS thread: the extra
threads bought a search no latency and burned the other core (memory_bridge/_blas.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memctl.cli import cli
from memory_bridge import ConfigError, Settings, run_bridge

PROBE = (
    "import json, numpy, threadpoolctl\n"
    "pools = threadpoolctl.threadpool_info()\n"
    "print(json.dumps([p['num_threads'] for p in pools if p['user_api'] == 'blas']))"
)
CORES = len(os.sched_getaffinity(0))


def blas_threads(env: dict[str, str], first: str = "") -> list[int]:
    """The BLAS thread counts of a fresh process that runs `first`, then loads numpy."""
    done = subprocess.run(
        [sys.executable, "-c", f"{first}\n{PROBE}"], env=env, capture_output=True, text=True, check=True
    )
    return list(json.loads(done.stdout))


def environment(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    return env | values


@pytest.mark.skipif(CORES < 2, reason="one core: OpenBLAS runs one thread whatever the setting")
def test_numpy_loaded_after_it_runs_one_blas_thread() -> None:
    assert blas_threads(environment()) == [CORES]  # numpy's own default: every core
    assert blas_threads(environment(), "from memory_bridge import one_blas_thread; one_blas_thread()") == [1]


@pytest.mark.skipif(CORES < 2, reason="one core: OpenBLAS runs one thread whatever the setting")
def test_a_count_the_environment_sets_is_kept() -> None:
    first = "from memory_bridge import one_blas_thread; one_blas_thread()"
    assert blas_threads(environment(OPENBLAS_NUM_THREADS="2"), first) == [2]


def test_the_bridge_and_the_cli_set_it_before_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    with pytest.raises(ConfigError):  # `/` is refused as a workspace: the first check it makes
        run_bridge(Settings(project=Path("/")), http=False)
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    assert CliRunner().invoke(cli, ["serve", "--help"]).exit_code == 0
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
