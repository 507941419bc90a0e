"""Settings the inventory decides, kept in the project's `.memory/config.toml`.

Only the keys given are set (`merge_toml_key`); the user's other settings and comments
stay as they are, and an unchanged file is not written.
"""

from __future__ import annotations

from pathlib import Path

from memory_bridge import write_atomically

from ._clients import unified_diff
from ._merge import merge_toml_key

__all__ = ["CONFIG", "apply_settings"]

CONFIG = Path(".memory/config.toml")


def apply_settings(workspace: Path, settings: dict[str, str], *, check: bool) -> tuple[bool, str | None]:
    """Set `settings` in the workspace's config.toml; whether it changed, and the diff."""
    path = workspace / CONFIG
    current = path.read_text(encoding="utf-8") if path.exists() else None
    desired = current or ""
    for key, value in sorted(settings.items()):
        desired = merge_toml_key(desired, key, value)
    if desired == (current or "") and (current is not None or not settings):
        return False, None
    diff = unified_diff(CONFIG.as_posix(), current, desired)
    if not check:
        write_atomically(path, desired)
    return True, diff
