"""Issue 13, finding 6: whatever command creates memctl's files, other users cannot read them.

Every directory memctl creates for its data is 0700 and every store, token, outbox and log
file 0600, under the usual umask 022, for each command that creates one: `serve` on stdio
and HTTP and `restore` (both without `up` were the bug), `backup`, a capture hook, `token
rotate`, `init` and `up`. `memctl doctor` reports a looser mode and says what to do.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.stdio import stdio_client

from memctl.cli import cli
from memctl.operations._modes import loose_modes
from memory_bridge import EntryWrite, StoreUnavailable, load_settings, open_entry_store
from tests.bridges import bridge_env, http_bridge, stdio_params

pytestmark = pytest.mark.anyio
ENTRY = {"id": "db-creds", "title": "DB", "body": "the staging database", "type": "reference", "tags": ["db"]}


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    """The common default umask, under which mkdir and SQLite alone make 0755 and 0644."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A private HOME and XDG tree, for subprocesses and in-process commands alike."""
    home = tmp_path / "home"
    home.mkdir()
    values = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "MEMCTL_EMBEDDING_MODEL": "none",
        "COLUMNS": "1000",
    }
    for name in list(os.environ):
        if name.startswith(("MEMCTL_", "MEMORY_MCP_", "DIFY_")):
            monkeypatch.delenv(name)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def memctl(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return dict(json.loads(result.stdout))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def assert_private(root: Path, *expected: str) -> None:
    for name in expected:
        assert (root / name).exists(), name
    assert [(str(p), oct(m)) for p, m in loose_modes(root)] == []


async def test_serve_on_stdio_creates_private_stores(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "app"
    project.mkdir()
    async with Client(stdio_client(stdio_params(project, **env))) as client:
        saved = await client.call_tool("memory_set", ENTRY)
        assert not saved.is_error
        stored = await client.call_tool(
            "save_to_dataset", {"dataset": "knowledge", "name": "db.md", "text": "staging database notes"}
        )
        assert not stored.is_error, stored.content
        assert_private(project / ".memory", "entries.db-wal", "entries.db-shm", "knowledge.db-wal")
    assert_private(project / ".memory", "entries.db", "knowledge.db")
    assert mode(project / ".memory") == 0o700 and mode(project / ".memory" / "entries.db") == 0o600


def test_serve_on_http_creates_private_stores(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "app"
    project.mkdir()
    with http_bridge(project, **env):
        pass
    assert_private(project / ".memory", "entries.db")


def _seed(project: Path) -> None:
    async def run() -> None:
        store = open_entry_store(load_settings(project=project))
        try:
            await store.set(
                EntryWrite("n-1", "Note", "body", "decision", ("ops",)),
                ttl=None,
                if_version=None,
                operation_id=None,
            )
        finally:
            await store.close()

    anyio.run(run)


def test_backup_and_restore_create_private_files(tmp_path: Path, env: dict[str, str]) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    _seed(source)
    archive = tmp_path / "new-dir" / "nested" / "app.tar.gz"
    assert memctl("backup", "--project", str(source), "-o", str(archive))["ok"] is not False
    assert mode(archive) == 0o600
    assert mode(archive.parent) == mode(archive.parent.parent) == 0o700

    target.mkdir()
    assert memctl("restore", "--project", str(target), "-i", str(archive))["ok"] is True
    assert_private(target / ".memory", "entries.db", "knowledge.db")


def test_a_capture_hook_creates_a_private_capture_tree(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "app"
    (project / ".memory").mkdir(parents=True, mode=0o700)
    done = subprocess.run(
        [sys.executable, "-m", "memctl", "hook", "session-end", "#", "memctl-hook-v1"],
        input="not json",
        cwd=project,
        env=bridge_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert_private(project / ".memory", "capture", "capture/capture.log")


def test_token_rotate_and_init_create_private_files(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "app"
    memctl("init", "--project", str(project))
    memctl("token", "rotate", "--project", str(project))
    assert_private(project / ".memory", "config.toml", "bridge.token", "bridge.token.previous")
    assert_private(Path(env["XDG_CONFIG_HOME"]) / "memctl")


def test_up_creates_private_stores_and_run_logs(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "app"
    project.mkdir()
    state = tmp_path / "state"
    done = subprocess.run(
        [sys.executable, "-m", "memctl", "up", "--project", str(project), "--json"],
        env=bridge_env(**env, MEMCTL_STATE_DIR=str(state)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert_private(project / ".memory", "entries.db", "knowledge.db", "bridge.token")
    assert_private(state, "runs")


def test_doctor_flags_a_store_others_can_read(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "app"
    _seed(project)
    db = project / ".memory" / "entries.db"
    ok = {c["name"]: c for c in memctl("doctor", "--project", str(project))["checks"]}  # type: ignore[union-attr]
    assert ok["file modes"]["status"] == "ok"

    db.chmod(0o644)
    (project / ".memory").chmod(0o755)
    report = memctl("doctor", "--project", str(project))
    checks = {c["name"]: c for c in report["checks"]}  # type: ignore[union-attr]
    assert report["ok"] is False
    assert checks["file modes"]["status"] == "fail"
    assert f"{db} (644)" in checks["file modes"]["detail"]
    assert checks["file modes"]["fix"] == f"chmod -R go-rwx {project / '.memory'}"


def test_a_fifo_in_place_of_the_store_is_refused_not_waited_on(tmp_path: Path, env: dict[str, str]) -> None:
    """Creating the store file 0600 first must not block on a FIFO planted there."""
    memory = tmp_path / "app" / ".memory"
    memory.mkdir(parents=True, mode=0o700)
    os.mkfifo(memory / "entries.db")
    with pytest.raises(StoreUnavailable, match="cannot be created or opened"):
        open_entry_store(load_settings(project=tmp_path / "app"))
