"""The public surface is exactly what each public package's __all__ pins."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

PUBLIC_PACKAGES = [
    "memory_bridge",
    "memory_bridge.core",
    "memory_bridge.maintenance",
    "memory_bridge.search",
    "memory_bridge.stores",
    "memory_bridge.stores.dify",
    "memory_bridge.stores.sqlite",
    "memory_bridge.stores.valkey",
    "memory_bridge.tools",
]


def _isort_order(name: str) -> tuple[int, str]:
    """Ruff's `__all__` order (RUF022): constants, then classes, then the rest."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


@pytest.mark.parametrize("name", PUBLIC_PACKAGES)
def test_exports_are_sorted_and_complete(name: str) -> None:
    package = importlib.import_module(name)
    exported = package.__all__
    assert exported == sorted(exported, key=_isort_order)
    assert all(hasattr(package, export) for export in exported)
    loaded = {
        n for n, value in vars(package).items() if not n.startswith("_") and not isinstance(value, ModuleType)
    }
    assert loaded | set(package._LAZY) == set(exported)


@pytest.mark.parametrize("name", PUBLIC_PACKAGES)
def test_an_unknown_name_is_an_attribute_error(name: str) -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = importlib.import_module(name).no_such_name
