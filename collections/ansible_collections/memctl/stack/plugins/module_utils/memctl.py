"""Shared by memctl's modules: import memctl on the target, or fail saying how to fix it."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any


def import_memctl(module: Any, name: str) -> ModuleType:
    """Import `name` from memctl's packages, failing the task clearly when they are missing."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        module.fail_json(
            msg=(
                f"memctl is not installed for {sys.executable} ({exc}); install memctl on this "
                "host, or set ansible_python_interpreter to the Python that has it"
            )
        )
        raise  # fail_json exits; this keeps type checkers informed
