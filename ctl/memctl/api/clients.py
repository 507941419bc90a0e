"""Wire a project's AI clients (Claude Code, Cursor, VS Code, Codex, ...) to its memory,
take them back out, and prove each client file starts the server as it says."""

from ..provision._clients import Change, Plan, apply, install_launcher, remove
from ..provision._proof import Proof, prove

__all__ = ["Change", "Plan", "Proof", "apply", "install_launcher", "prove", "remove"]
