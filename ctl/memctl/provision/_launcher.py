"""The user-level launcher every rendered client config starts: `~/.local/bin/memctl`.

Clients start MCP servers and hooks with their own PATH (a GUI editor's, a login shell's),
which need not hold the memctl that provisioned the project: under `uv run` or in a venv
that nobody activated, a bare `memctl` is "not found". So `memctl up` writes a small shell
script at a fixed place in the home directory that runs the memctl it was written by, and
client configs name that place. Files a team commits spell it through the home directory
(`${HOME}` for Claude Code, `${userHome}` for Cursor and VS Code), so they hold no one
user's path. A `~/.local/bin/memctl` that memctl did not write (say, from
`pip install --user memctl`) is the user's own memctl and is left as it is.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

from memory_bridge import write_atomically

from ._templates import render

__all__ = ["LAUNCHER_SIGNATURE", "default_launcher", "installed_command", "launcher_text", "write_launcher"]

LAUNCHER_SIGNATURE = "# memctl-launcher-v1"
"""The second line of every launcher memctl writes; marks the file as memctl's to rewrite."""

LAUNCHER_HOME_PATH = ".local/bin/memctl"
"""Where the launcher lives, relative to the home directory."""


def default_launcher() -> Path:
    """`~/.local/bin/memctl` of the user running memctl."""
    return Path.home() / LAUNCHER_HOME_PATH


def installed_command() -> list[str]:
    """The command that runs this memctl from any shell: its console script beside the
    running interpreter, else that interpreter with `-m memctl`."""
    script = Path(sys.executable).with_name("memctl")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "memctl"]


def launcher_text(command: list[str]) -> str:
    """The launcher script that runs `command` with the arguments it is given."""
    return render("launcher/memctl.sh.j2", signature=LAUNCHER_SIGNATURE, command=shlex.join(command))


def _ours(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return LAUNCHER_SIGNATURE in handle.read(512)
    except OSError:
        return False


def write_launcher(path: Path, *, check: bool) -> tuple[str, str | None, str]:
    """Bring the launcher at `path` up to date; (action, its text before, the text wanted).

    The action is created, updated, unchanged, or kept (a file memctl did not write, left
    alone). With `check`, nothing is written.
    """
    wanted = launcher_text(installed_command())
    if path.is_symlink() or (path.exists() and not _ours(path)):
        return "kept", None, wanted
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if current == wanted and stat.S_IMODE(path.stat().st_mode) == 0o700:
        return "unchanged", current, wanted
    if not check:
        write_atomically(path, wanted, mode=0o700)
    return ("created" if current is None else "updated"), current, wanted
