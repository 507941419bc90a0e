"""Shared by memctl's modules: fail a task clearly on a host where memctl is not installed.

Each module imports memctl's public API (`memctl.api`) and `memory_bridge` by name, inside
`try`, and hands an `ImportError` to `memctl_missing`.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn


def memctl_missing(module: Any, exc: ImportError) -> NoReturn:
    """Fail the task saying memctl is missing for this interpreter, and how to fix that."""
    module.fail_json(
        msg=(
            f"memctl is not installed for {sys.executable} ({exc}); install memctl on this "
            "host, or set ansible_python_interpreter to the Python that has it"
        )
    )
    raise exc  # fail_json exits; this keeps type checkers informed
