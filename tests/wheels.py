"""memctl's wheel, built from this checkout the way a release is (`uv build`), and a venv holding it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["REPO", "build_wheel", "install_wheel", "uv"]

REPO = Path(__file__).resolve().parents[1]


def uv() -> str:
    """The uv that runs this suite (scripts/ensure-uv.sh puts it on PATH)."""
    found = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    assert found, "uv is not on PATH (scripts/ensure-uv.sh installs it)"
    return found


def build_wheel(out: Path) -> Path:
    """`uv build` of this checkout (sdist, then the wheel from the sdist); the wheel's path."""
    result = subprocess.run(
        [uv(), "build", "--quiet", "--out-dir", str(out), str(REPO)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("memctl-*.whl")
    return wheel


def install_wheel(wheel: Path, venv: Path, *, deps: bool) -> Path:
    """A fresh venv with the wheel installed (its dependencies too when `deps`); its site-packages."""
    subprocess.run([uv(), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    command = [uv(), "pip", "install", "--quiet", "--python", str(python), str(wheel)]
    result = subprocess.run(command if deps else [*command, "--no-deps"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    (site,) = venv.glob("lib/python3*/site-packages")
    return site
