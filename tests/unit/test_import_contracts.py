"""The import contracts hold, so `pytest` alone catches a broken one: the bridge's layers,
the control plane's layers (the CLI over the web view over the service API over the planes),
nothing outside the bridge or memctl importing their private modules (memctl's public API is
`memctl.api`), the web view and the collection never importing a click command, the bridge
never importing memctl."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PLUGINS = REPO / "collections" / "ansible_collections" / "memctl" / "stack" / "plugins"
MEMCTL = REPO / "ctl" / "memctl"


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


def test_every_part_of_memctl_has_its_layer() -> None:
    """A layers contract checks only the modules it names: a new plane, or a module left loose
    beside `cli.py`, must take its place in the contract (pyproject.toml) before it counts."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers" and c["containers"] == ["memctl"]]
    named = {name.strip() for layer in layers for name in layer.replace(":", "|").split("|")}
    parts = {path.stem for path in MEMCTL.glob("*.py")} | {
        path.parent.name for path in MEMCTL.glob("*/__init__.py")
    }
    assert parts - {"__init__", "__main__"} == named
