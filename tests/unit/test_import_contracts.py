"""The import contracts hold, so `pytest` alone catches a broken one: the bridge's layers,
nothing outside the bridge or memctl importing their private modules (memctl's public API is
`memctl.api`), the web view and the collection never importing a click command, the bridge
never importing memctl."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PLUGINS = REPO / "collections" / "ansible_collections" / "memctl" / "stack" / "plugins"


def test_lint_imports_keeps_every_contract() -> None:
    path = os.pathsep.join(filter(None, [str(REPO / "collections"), os.environ.get("PYTHONPATH")]))
    run = subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_ansible_modules_import_memctl_by_name() -> None:
    """lint-imports sees only `import` statements: a plugin that loads a module from a string
    (importlib, __import__) would escape every contract above."""
    dynamic = {
        f"{path.relative_to(PLUGINS)}:{node.lineno}"
        for path in PLUGINS.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if (isinstance(node, (ast.Import, ast.ImportFrom)) and "importlib" in ast.unparse(node))
        or (isinstance(node, ast.Name) and node.id == "__import__")
    }
    assert not dynamic


def test_ansible_modules_reach_memctl_only_through_its_api() -> None:
    """Every plugin that needs memctl imports `memctl.api` (the contract would catch a
    private module; this catches a plugin that stopped importing memctl at all)."""
    importers = {
        path.name
        for path in PLUGINS.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memctl")
    }
    modules = {
        node.module
        for path in PLUGINS.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memctl")
    }
    assert {"client_config.py", "memory_store.py", "project_settings.py", "project_status.py"} <= importers
    assert modules <= {"memctl.api", "memctl.api.project", "memctl.api.status"}
