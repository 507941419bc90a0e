"""A project as the inventory declares it, and the settings kept in its `.memory/config.toml`."""

from ..provision._inventory import Inventory, Project
from ..provision._project_settings import CONFIG, apply_settings

__all__ = ["CONFIG", "Inventory", "Project", "apply_settings"]
