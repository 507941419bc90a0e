"""Fixtures shared by every test layer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from .real_dify import RealDify, console, real_dify_target


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache directory for the whole run (the int8 model is built in it once)."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(autouse=True)
def own_home(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Iterator[Path]:
    """Every test has its own HOME and XDG directories, so nothing is read from, or left in,
    the state of the user running the suite (their projects, run logs, launcher, Codex)."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        patch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
        patch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
        patch.setenv("XDG_CACHE_HOME", str(shared_cache))
        patch.setenv("CODEX_HOME", str(home / ".codex"))
        for name in ("MEMCTL_INVENTORY", "MEMCTL_STATE_DIR", "MEMCTL_PROJECT"):
            patch.delenv(name, raising=False)
        yield home


@pytest.fixture(scope="session")
def real_dify() -> Iterator[RealDify]:
    """The real Dify of the `real_dify` tests, with a dataset API key for this session."""
    target = real_dify_target()
    with console(target) as client:
        created = client.post("/console/api/datasets/api-keys")
        created.raise_for_status()
        key = created.json()
    try:
        yield replace(target, api_key=str(key["token"]))
    finally:
        with console(target) as client:
            client.delete(f"/console/api/datasets/api-keys/{key['id']}")
