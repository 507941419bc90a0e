"""Where memctl's Ansible content and templates live: inside the installed package, or in this checkout."""

from __future__ import annotations

from pathlib import Path

from memory_bridge import ConfigError

__all__ = ["content_root"]

_PACKAGED = Path(__file__).parents[1] / "_ansible"
_CHECKOUT = Path(__file__).resolve().parents[3]


def content_root() -> Path:
    """The directory holding `playbooks/`, `roles/`, `collections/`, `inventories/` and `templates/`."""
    for root in (_PACKAGED, _CHECKOUT):
        if (root / "playbooks" / "site.yml").is_file():
            return root
    raise ConfigError("memctl's playbooks are missing from this installation; reinstall memctl")
