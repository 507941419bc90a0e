"""The import contracts hold, so `pytest` alone catches a broken one: the bridge's layers,
nothing outside the bridge importing its private modules, the bridge never importing memctl."""

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


def _named_imports(path: Path) -> list[str]:
    """The modules a plugin imports by name through `import_memctl`, which lint-imports cannot see."""
    return [
        node.args[1].value
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "import_memctl"
        and isinstance(node.args[1], ast.Constant)
    ]


def test_ansible_modules_import_only_public_bridge_modules() -> None:
    bridge = {
        f"{path.relative_to(PLUGINS)}: {name}"
        for path in PLUGINS.rglob("*.py")
        for name in _named_imports(path)
        if name.partition(".")[0] == "memory_bridge"
    }
    assert bridge, "no plugin imports the bridge by name: has import_memctl changed?"
    private = {
        entry for entry in bridge if any(part.startswith("_") for part in entry.split(": ")[1].split("."))
    }
    assert not private
