"""The wheel of the running memctl, built on the control node for the machines it installs
itself on over SSH (the `memctl_install` role copies it there).

It is built from `content_root()`: a checkout, or an installed wheel's `memctl/_ansible`,
which carries the same sources. Builds are reproducible, so an unchanged memctl gives the
same bytes and the role installs nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from memory_bridge import ConfigError, private_dir, set_mode

from ._content import content_root
from ._playbook import state_dir

__all__ = ["control_wheel"]


def _build_command(out: Path) -> list[str]:
    uv = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv:
        return [uv, "build", "--wheel", "--quiet", "--out-dir", str(out), str(content_root())]
    probe = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, check=False)
    if probe.returncode == 0:
        pip = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"]
        return [*pip, "--wheel-dir", str(out), str(content_root())]
    raise ConfigError(
        "building memctl's wheel for the remote machines needs uv or pip on this machine; install "
        "one, or set memctl_install_source: index (or none) in the inventory"
    )


def control_wheel() -> Path:
    """Build this memctl's wheel into the state directory's `wheels/`; its path."""
    wheels = state_dir() / "wheels"
    private_dir(wheels)
    with tempfile.TemporaryDirectory(dir=wheels, prefix=".build-") as scratch:
        result = subprocess.run(_build_command(Path(scratch)), capture_output=True, text=True, check=False)
        built = sorted(Path(scratch).glob("memctl-*.whl"))
        if result.returncode != 0 or len(built) != 1:
            tail = " / ".join((result.stderr or result.stdout).strip().splitlines()[-5:])
            raise ConfigError(f"building memctl's wheel from {content_root()} failed: {tail}")
        wheel = wheels / built[0].name
        set_mode(built[0], 0o600)  # before the rename: nothing chmods a path a link could take
        os.replace(built[0], wheel)
    return wheel
