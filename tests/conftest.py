"""Fixtures shared by every test layer."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from .real_dify import RealDify, console, real_dify_release, real_dify_target

# Under xdist (scripts/test runs `-n 2 --dist loadscope --no-loadscope-reorder`) a worker
# takes each group of tests whole: a module, so its module fixtures are made once; or one
# of the groups below, started first. The fleet's machines and the provisioned stacks
# (session fixtures of minutes, each building images and starting bridges) share one
# group, so they run one after the other on one worker while the other takes the rest:
# on CI's machine, with the two at once, every bridge they started stayed unhealthy (stop
# 27; never seen here, nor on CI when they ran one after the other), and the pair costs
# little wall time, as the rest takes as long. The real Dify tests stay on one worker, as
# one of them stops and restarts its API; so do the users of `tiny_image`, which each
# session imports anew. A module using the stack or the fleet left out of its group is
# still correct, only slower: it builds that fixture again.
FIRST_GROUPS = {
    "docker_stacks": (
        "tests/fleet/",
        "tests/stack/test_down.py",
        "tests/stack/test_stack.py",
        "tests/stack/test_upgrade.py",
    ),
    "real_dify": ("tests/integration/test_real_dify.py", "tests/integration/test_real_dify_contract.py"),
    "tiny_image": (
        "tests/stack/test_containers.py",
        "tests/stack/test_docker_container.py",
        "tests/stack/test_docker_probes.py",
    ),
}


def xdist_group(nodeid: str) -> str:
    """The group of a test: one of FIRST_GROUPS, else its module."""
    module = nodeid.split("::", 1)[0]
    for group, prefixes in FIRST_GROUPS.items():
        if module.startswith(prefixes) or (group == "real_dify" and "[real-dify" in nodeid):
            return group
    return module


def _rank(item: pytest.Item) -> int:
    group = xdist_group(item.nodeid)
    return list(FIRST_GROUPS).index(group) if group in FIRST_GROUPS else len(FIRST_GROUPS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=_rank)  # stable: each group keeps its order; the scheduler keeps this one


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadscope` with the groups of `xdist_group` as its scopes."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

    return GroupScheduling(config, log)


def pytest_report_header(config: pytest.Config) -> str | None:
    """The real Dify release the `real_dify` tests of this run talk to."""
    url = os.environ.get("MEMCTL_TEST_DIFY_URL", "")
    return f"real Dify: {real_dify_release(url)} at {url}" if url else None


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
