"""Unit test of `core._gitignore`: git's own answer, and refusal when git cannot give one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memory_bridge.core._gitignore import Unanswered, git_ignored

pytestmark = pytest.mark.anyio


def _repo(root: Path) -> Path:
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("*.log\nout/\n!keep.log\n")
    (root / "sub").mkdir()
    (root / "sub" / ".gitignore").write_text("local.md\n")
    return root


async def test_git_answers_nested_files_negations_and_directories(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    paths = ["a.log", "keep.log", "out/x.md", "sub/local.md", "local.md", "docs/a.md", "we\nird.md"]
    assert await git_ignored(root, paths) == {"a.log", "out/x.md", "sub/local.md"}


async def test_a_tracked_file_is_not_ignored(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    (root / "tracked.log").write_text("x\n")
    subprocess.run(["git", "-C", str(root), "add", "-f", "tracked.log"], check=True)
    assert await git_ignored(root, ["tracked.log", "other.log"]) == {"other.log"}


async def test_outside_a_work_tree_nothing_is_ignored(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*\n")
    assert await git_ignored(tmp_path, ["a.md"]) == set()


async def test_a_work_tree_without_git_is_unanswered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _repo(tmp_path / "repo")
    monkeypatch.setenv("PATH", str(tmp_path / "no-binaries"))
    answer = await git_ignored(root, ["a.md"])
    assert isinstance(answer, Unanswered) and "git is not installed" in answer.reason


async def test_a_hung_git_is_unanswered_within_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(tmp_path / "repo")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text("#!/bin/sh\nexec /bin/sleep 60\n")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr("memory_bridge.core._gitignore.GIT_SECONDS", 0.5)
    answer = await git_ignored(root, ["a.md"])
    assert isinstance(answer, Unanswered) and "did not answer" in answer.reason


async def test_a_git_that_exits_without_reading_is_unanswered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(tmp_path / "repo")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text("#!/bin/sh\necho 'fatal: broken' >&2\nexit 128\n")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    answer = await git_ignored(root, [f"docs/{n}.md" for n in range(50_000)])
    assert isinstance(answer, Unanswered) and "broken" in answer.reason


async def test_a_large_batch_is_answered_whole(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    paths = [f"docs/{n}.log" for n in range(20_000)]
    assert await git_ignored(root, paths) == set(paths)


async def test_the_repositorys_fsmonitor_hook_never_runs(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    ran = tmp_path / "ran"
    subprocess.run(["git", "-C", str(root), "config", "core.fsmonitor", f"touch {ran}; false"], check=True)
    (root / "a.md").write_text("x\n")
    subprocess.run(["git", "-C", str(root), "add", "a.md"], check=True, env={"PATH": "/usr/bin:/bin"})
    ran.unlink(missing_ok=True)
    assert await git_ignored(root, ["a.log"]) == {"a.log"}
    assert not ran.exists()
