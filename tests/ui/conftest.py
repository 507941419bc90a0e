"""A project with entries (one of them hostile), documents and lessons, for the web view."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from memory_bridge import core as ops
from memory_bridge import load_settings
from memory_bridge.stores import open_entry_store

from ..day2.conftest import clean_environment, memctl
from ..day2.stores import note, seed_documents, seed_entries

__all__ = ["HOSTILE", "clean_environment", "write_entry"]

HOSTILE = "<script>document.title='owned'</script><img src=x onerror=alert(1)>"
LESSON = {"atom_type": "self-improvement-lesson", "project_module": "api"}
DOCS = [
    (
        "knowledge",
        "deploy.md",
        "Deploys go through the blue/green switch.",
        {"atom_type": "project-lore"},
        True,
    ),
    ("knowledge", "hostile.md", HOSTILE, {"atom_type": "reference", "tags": (HOSTILE[:30],)}, True),
    (
        "self_improvement",
        "lesson-timeout.md",
        "Retry with backoff.",
        {**LESSON, "error_pattern": "timeout"},
        True,
    ),
    ("self_improvement", "lesson-retry.md", "Cap the retries.", {**LESSON, "error_pattern": "timeout"}, True),
    (
        "self_improvement",
        "lesson-oom.md",
        "Stream, do not load.",
        {**LESSON, "error_pattern": "oom-kill"},
        True,
    ),
]


def write_entry(project: Path, id: str, **fields: str) -> None:
    """One more version of entry `id` (any memory_set an agent could make)."""

    async def run() -> None:
        store = open_entry_store(load_settings(project=project))
        try:
            await ops.set_entry(
                store,
                note(id, **fields),
                ttl=None,
                if_version=None,
                operation_id=None,
                max_entries_warn=10**6,
            )
        finally:
            await store.close()

    anyio.run(run)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    seed_entries(tmp_path, 5)
    seed_documents(tmp_path, DOCS)
    write_entry(tmp_path, "release/process", title="Release process", body="Tag, build, publish.")
    write_entry(tmp_path, "release/process", title="Release process", body="Tag, build, sign, publish.")
    write_entry(tmp_path, "evil", title=HOSTILE, body=HOSTILE)
    rotated = memctl("token", "rotate", "--project", str(tmp_path), "--json")
    assert rotated.code == 0, rotated.stderr
    return tmp_path


_SHOTS: list[Path] = []
_ARTIFACTS = os.environ.get("MEMCTL_TEST_ARTIFACTS")  # read before the tests clear MEMCTL_*


@pytest.fixture
def artifacts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where a browser test keeps its screenshots: $MEMCTL_TEST_ARTIFACTS/ui/TEST, else a
    temporary directory; the run's summary names it."""
    name = request.node.name.replace("[", "-").replace("]", "")
    if _ARTIFACTS:
        folder = Path(_ARTIFACTS) / "ui" / name
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    else:
        folder = tmp_path_factory.mktemp(f"ui-{name}")
    _SHOTS.append(folder)
    return folder


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for folder in _SHOTS:
        terminalreporter.write_line(f"web view screenshots: {folder}")
