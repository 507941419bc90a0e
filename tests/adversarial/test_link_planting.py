"""Issue 32, finding 2: no memctl command writes through a link planted where it writes.

Each writer is run through the interface a user touches, with a symlink to a victim
outside planted at a file's place and at a folder's place: `export --markdown`, `import
--markdown` (its rewrite of applied files), `backup`, `restore` (its config.toml), the
client configs `up` renders into the workspace, the capture log, `init`'s config.toml and the
Ansible module that writes the bridge token. The victim keeps its
content and mode, the link stays, and the command names it. Races: a link swapped in
between the check and the write, and a thread that keeps flipping an exported file and its
folder to links while exports run.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from ansible_collections.memctl.stack.plugins.modules.bridge_token import ensure_token
from memctl.api.clients import Plan, apply
from memctl.capture._front import spawn_worker
from memctl.capture._paths import CaptureDirs
from memctl.cli import cli
from memctl.transfer import _markdown_import
from memory_bridge import EntryWrite, LinkRefused, load_settings, open_entry_store
from memory_bridge.stores import DocMetadata, open_knowledge_store

ENTRY_FILE = "entries/decision/n-1.md"
DOC_FILE = "documents/ops/runbook.md"


@pytest.fixture(autouse=True)
def no_stray_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("MEMCTL_", "MEMORY_MCP_", "DIFY_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEMCTL_EMBEDDING_MODEL", "none")
    monkeypatch.setenv("COLUMNS", "1000")


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the user's, outside every tree memctl writes."""
    path = tmp_path / "home-of-victim" / "victim.txt"
    path.parent.mkdir()
    path.write_text("precious\n")
    path.chmod(0o640)
    return path


def untouched(victim: Path) -> bool:
    """The victim as it was, and nothing new beside it."""
    return (
        victim.read_text() == "precious\n"
        and stat.S_IMODE(victim.stat().st_mode) == 0o640
        and [p.name for p in victim.parent.iterdir()] == [victim.name]
    )


def memctl(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project holding two entries and one document."""
    path = tmp_path / "app"

    async def run() -> None:
        settings = load_settings(project=path)
        entries, knowledge = open_entry_store(settings), open_knowledge_store(settings)
        try:
            for n in (1, 2):
                write = EntryWrite(f"n-{n}", "Note", f"body {n}", "decision", ("ops",))
                await entries.set(write, ttl=None, if_version=None, operation_id=None)
            await knowledge.create_slot("ops")
            metadata = DocMetadata(scope=settings.project_scope)
            await knowledge.upsert("ops", "runbook.md", "restart it", metadata, origin="test")
        finally:
            await entries.close()
            await knowledge.close()

    anyio.run(run)
    return path


def export(project: Path, out: Path) -> tuple[int, dict[str, Any]]:
    code, stdout, _ = memctl("export", "--markdown", str(out), "--project", str(project), "--json")
    return code, json.loads(stdout)


# -- export ----------------------------------------------------------------------------------


@pytest.mark.parametrize("planted", [ENTRY_FILE, DOC_FILE])
def test_export_leaves_a_linked_file_alone(tmp_path: Path, project: Path, victim: Path, planted: str) -> None:
    out = tmp_path / "out"
    assert export(project, out)[0] == 0
    (out / planted).unlink()
    (out / planted).symlink_to(victim)
    code, report = export(project, out)
    assert untouched(victim) and (out / planted).is_symlink()
    assert code == 7 and report["ok"] is False and report["files"] == 2
    assert report["links"] == [{"file": planted, "reason": report["links"][0]["reason"]}]
    assert "symbolic link" in report["links"][0]["reason"]
    code, text, errors = memctl("export", "--markdown", str(out), "--project", str(project))
    assert code == 7 and f"left alone: {planted}" in text and "1 link(s)" in errors
    assert untouched(victim)


@pytest.mark.parametrize("folder", ["entries", "entries/decision", "documents/ops"])
def test_export_writes_nothing_into_a_linked_folder(
    tmp_path: Path, project: Path, victim: Path, folder: str
) -> None:
    out = tmp_path / "out"
    (out / folder).parent.mkdir(parents=True, exist_ok=True)
    (out / folder).symlink_to(victim.parent)
    code, report = export(project, out)
    assert untouched(victim) and (out / folder).is_symlink()
    under = {link["file"] for link in report["links"]}
    assert code == 7 and under and all(where.startswith(f"{folder}/") for where in under)


def test_an_exported_file_or_folder_flipped_to_a_link_in_a_loop_never_reaches_the_victim(
    tmp_path: Path, project: Path, victim: Path
) -> None:
    out = tmp_path / "out"
    assert export(project, out)[0] == 0
    stop = threading.Event()

    def flip() -> None:
        for n in range(50_000):
            if stop.is_set():
                return
            place, link = (out / ENTRY_FILE, victim) if n % 2 else (out / "entries/decision", victim.parent)
            spare = place.with_name(f"{place.name}.{n}")
            try:
                place.rename(spare)
                place.symlink_to(link)
                place.unlink()
                spare.rename(place)
            except OSError:
                continue

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        for _ in range(15):
            try:
                code, _ = export(project, out)
            except FileNotFoundError:  # a folder away mid-swap: the export stops, writes nothing
                continue
            assert code in (0, 7)
    finally:
        stop.set()
        flipper.join()
    assert untouched(victim)


# -- import ----------------------------------------------------------------------------------


def _edit(path: Path) -> None:
    path.write_bytes(path.read_bytes().rstrip(b"\n") + b" edited\n")


def test_import_reports_a_linked_file_and_reads_nothing_through_it(
    tmp_path: Path, project: Path, victim: Path
) -> None:
    out = tmp_path / "out"
    assert export(project, out)[0] == 0
    (out / ENTRY_FILE).unlink()
    (out / ENTRY_FILE).symlink_to(victim)
    (out / "entries" / "linked").symlink_to(victim.parent)
    code, stdout, _ = memctl("import", "--markdown", str(out), "--project", str(project), "--json")
    report = json.loads(stdout)
    links = {r["file"]: r for r in report["items"] if r["status"] == "link"}
    assert code == 7 and report["link"] == 2 and set(links) == {ENTRY_FILE, "entries/linked"}
    assert "symbolic link" in links[ENTRY_FILE]["detail"] and untouched(victim)


def test_import_does_not_rewrite_through_a_link_planted_after_the_apply(
    tmp_path: Path, project: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    assert export(project, out)[0] == 0
    _edit(out / ENTRY_FILE)
    save = _markdown_import.save_item

    async def save_then_plant(*args: Any, **kwargs: Any) -> Any:
        outcome = await save(*args, **kwargs)
        (out / ENTRY_FILE).unlink()
        (out / ENTRY_FILE).symlink_to(victim)  # between the apply and the rewrite
        return outcome

    monkeypatch.setattr(_markdown_import, "save_item", save_then_plant)
    code, stdout, _ = memctl("import", "--markdown", str(out), "--project", str(project), "--json")
    [updated] = [r for r in json.loads(stdout)["items"] if r["status"] == "updated"]
    assert code == 0 and updated["file"] == ENTRY_FILE and "not rewritten" in updated["detail"]
    assert untouched(victim) and (out / ENTRY_FILE).is_symlink()


def test_import_does_not_rewrite_into_a_folder_swapped_for_a_link(
    tmp_path: Path, project: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    assert export(project, out)[0] == 0
    _edit(out / ENTRY_FILE)
    (victim.parent / "n-1.md").write_text("theirs\n")
    save = _markdown_import.save_item

    async def save_then_swap(*args: Any, **kwargs: Any) -> Any:
        outcome = await save(*args, **kwargs)
        (out / "entries/decision").rename(out / "moved")
        (out / "entries/decision").symlink_to(victim.parent)
        return outcome

    monkeypatch.setattr(_markdown_import, "save_item", save_then_swap)
    code, stdout, _ = memctl("import", "--markdown", str(out), "--project", str(project), "--json")
    [updated] = [r for r in json.loads(stdout)["items"] if r["status"] == "updated"]
    assert code == 0 and updated["file"] == ENTRY_FILE and "not rewritten" in updated["detail"]
    assert (victim.parent / "n-1.md").read_text() == "theirs\n" and victim.read_text() == "precious\n"


# -- backup and restore ----------------------------------------------------------------------


def test_backup_does_not_write_through_a_linked_output(tmp_path: Path, project: Path, victim: Path) -> None:
    archive = tmp_path / "backups" / "app.tar.gz"
    archive.parent.mkdir()
    archive.symlink_to(victim)
    code, stdout, _ = memctl("backup", "--project", str(project), "-o", str(archive), "--json")
    error = json.loads(stdout)
    assert code == 16 and error["error"] == "LinkRefused" and str(archive) in error["message"]
    assert untouched(victim) and archive.is_symlink()


def test_restore_does_not_write_config_through_a_link(tmp_path: Path, project: Path, victim: Path) -> None:
    """Restore pins the archive's scope in .memory/config.toml: not through a link there."""
    archive = tmp_path / "app.tar.gz"
    assert memctl("backup", "--project", str(project), "-o", str(archive))[0] == 0
    victim.write_text("# precious\n")  # readable as settings, so only the write can fail
    target = tmp_path / "target"
    (target / ".memory").mkdir(parents=True, mode=0o700)
    (target / ".memory" / "config.toml").symlink_to(victim)
    code, stdout, _ = memctl("restore", "--project", str(target), "-i", str(archive), "--json")
    assert code == 16 and json.loads(stdout)["error"] == "LinkRefused"
    assert victim.read_text() == "# precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o640
    assert (target / ".memory" / "config.toml").is_symlink()


def test_restore_writes_nothing_through_a_linked_memory_folder(
    tmp_path: Path, project: Path, victim: Path
) -> None:
    archive = tmp_path / "app.tar.gz"
    assert memctl("backup", "--project", str(project), "-o", str(archive))[0] == 0
    target = tmp_path / "target"
    target.mkdir()
    (target / ".memory").symlink_to(victim.parent)
    code, stdout, _ = memctl("restore", "--project", str(target), "-i", str(archive), "--json")
    assert code == 16 and json.loads(stdout)["error"] == "LinkRefused"
    assert untouched(victim)


# -- client configs and the capture log -----------------------------------------------------


@pytest.mark.parametrize("planted", [".mcp.json", ".claude", ".vscode/mcp.json"])
def test_client_configs_leave_a_link_alone(tmp_path: Path, victim: Path, planted: str) -> None:
    workspace = tmp_path / "ws"
    (workspace / planted).parent.mkdir(parents=True)
    (workspace / planted).symlink_to(victim.parent if planted == ".claude" else victim)
    changes = apply(workspace, Plan(project=workspace, hooks=True))
    left = {c.path.relative_to(workspace).as_posix() for c in changes if c.action == "link-left-alone"}
    assert left and all(path == planted or path.startswith(f"{planted}/") for path in left)
    assert untouched(victim) and (workspace / planted).is_symlink()


@pytest.mark.parametrize("planted", ["capture/capture.log", "capture"])
def test_a_capture_hook_does_not_log_through_a_link(tmp_path: Path, victim: Path, planted: str) -> None:
    """A hook that skips notes it in .memory/capture/capture.log: not through a link there."""
    project = tmp_path / "app"
    (project / ".memory" / planted).parent.mkdir(parents=True, mode=0o700)
    (project / ".memory" / planted).symlink_to(victim if planted.endswith(".log") else victim.parent)
    result = CliRunner().invoke(cli, ["hook", "session-end", "--project", str(project)], input="not json")
    assert result.exit_code == 0 and "skipped" in result.stderr
    assert untouched(victim) and (project / ".memory" / planted).is_symlink()


def test_the_bridge_token_module_neither_writes_nor_chmods_through_a_link(
    tmp_path: Path, victim: Path
) -> None:
    token = tmp_path / "app" / ".memory" / "bridge.token"
    token.parent.mkdir(parents=True, mode=0o700)
    token.symlink_to(victim)  # a non-empty file of 0640: the module would fix its mode
    with pytest.raises(LinkRefused):
        ensure_token(token, check=False)
    assert untouched(victim) and token.is_symlink()


def test_init_does_not_create_its_config_through_a_dangling_link(tmp_path: Path, victim: Path) -> None:
    workspace = tmp_path / "app"
    (workspace / ".memory").mkdir(parents=True, mode=0o700)
    (workspace / ".memory" / "config.toml").symlink_to(victim.parent / "planted.toml")
    code, stdout, _ = memctl("init", "--project", str(workspace), "--json")
    assert code == 16 and json.loads(stdout)["error"] == "LinkRefused"
    assert untouched(victim) and (workspace / ".memory" / "config.toml").is_symlink()


def test_the_capture_worker_stderr_is_not_opened_through_a_link(tmp_path: Path, victim: Path) -> None:
    dirs = CaptureDirs(tmp_path / "app")
    dirs.worker_errors.parent.mkdir(parents=True)
    dirs.worker_errors.symlink_to(victim)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        spawn_worker(dirs, {"kind": "compile"}, dict(os.environ))
    assert untouched(victim) and dirs.worker_errors.is_symlink()
