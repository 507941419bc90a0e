"""Loading the model while another thread imports numpy (the background embedder's thread
does, at the lowest priority, while a search loads the model on its own thread)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

RACE = textwrap.dedent(
    """
    import os, threading
    from memory_bridge.search import load_minilm

    failures = []

    def import_numpy_slowly():
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        try:
            import numpy
        except ImportError as exc:
            failures.append(f"numpy: {exc}")

    def load():
        try:
            load_minilm()
        except ImportError as exc:
            failures.append(f"model: {exc}")

    threads = [threading.Thread(target=import_numpy_slowly), threading.Thread(target=load)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(failures[0].splitlines()[0] if failures else "ok")
    """
)

RUNS = 12


def test_the_model_loads_while_another_thread_imports_numpy() -> None:
    """Each run races the two imports in a fresh process; before the model's loader
    imported numpy first, about one run in five failed on a busy machine."""
    outcomes = [
        subprocess.run(
            [sys.executable, "-c", RACE], capture_output=True, text=True, check=True, timeout=120
        ).stdout.strip()
        for _ in range(RUNS)
    ]
    assert outcomes == ["ok"] * RUNS, outcomes
