"""The public surface is exactly what __all__ pins."""

from __future__ import annotations

import memory_bridge


def test_exports_are_sorted_and_complete() -> None:
    assert memory_bridge.__all__ == sorted(memory_bridge.__all__)
    assert all(hasattr(memory_bridge, name) for name in memory_bridge.__all__)
    subpackages = {"core", "search", "stores", "tools"}
    loaded = {n for n in vars(memory_bridge) if not n.startswith("_")} - subpackages
    assert loaded | set(memory_bridge._LAZY) == set(memory_bridge.__all__)
