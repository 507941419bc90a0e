"""Which directories may be a project's workspace: never the whole file system or a home.

A workspace is what absorb_files and scan_documents may read, so `/` or the user's home
directory itself would put every file on the machine (or every dotfile, key and
credential of the user) one tool call away. Every place a workspace is chosen (serve,
`memctl up`, `memctl init`, `memctl projects add`, an inventory) asks `check_workspace`.
"""

from __future__ import annotations

from pathlib import Path

from ._errors import ConfigError

__all__ = ["check_workspace"]

_WHAT_TO_DO = "choose the project's own directory instead (--project ~/src/app, or cd into it first)"


def check_workspace(workspace: Path) -> None:
    """Raise ConfigError when `workspace` is the file system's root or the home directory."""
    real = workspace.expanduser().resolve()
    if real == Path(real.anchor):
        raise ConfigError(
            f"the workspace {workspace} is the whole file system, which would let agents absorb "
            f"any file on this machine; {_WHAT_TO_DO}"
        )
    if real == Path.home().resolve():
        raise ConfigError(
            f"the workspace {workspace} is your home directory, which would let agents absorb "
            f"your dotfiles, keys and credentials; {_WHAT_TO_DO}"
        )
