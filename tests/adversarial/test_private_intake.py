"""Private files never enter memory through absorb_files or scan_documents.

A real stdio bridge over a git work tree holding memctl's bridge token, git's config,
git-ignored files and well-known secret files, reached directly, through `..`, through
symlinks planted inside the workspace and with other letter case: each is refused on its
own with a reason, the ordinary file beside them goes in, and search finds no trace of
them. `absorb_allow` in `.memory/config.toml` lets a named secret file in, never memctl's
or git's own files. And no bridge serves the home directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from ..bridges import bridge_env, stdio_params
from .judge import assert_has_reason

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

TOKEN_MARK = "tokenzebra7f3a9c"  # in .memory/bridge.token
GIT_MARK = "gitconfigokapi42"  # in .git/config
SECRET_MARK = "dotenvquokka99"  # in every secret file

SECRET_FILES = (
    ".env",
    ".env.production",
    "deploy/prod.env",
    "certs/server.pem",
    "certs/server.key",
    "certs/client.p12",
    "certs/client.pfx",
    "id_ed25519",
    "keys/id_deploy",
    ".ssh/known.md",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".git-credentials",
    ".aws/credentials",
    ".docker/config.json",
    ".kube/config",
    "kubeconfig.yaml",
    ".config/gcloud/application_default_credentials.json",
    "ENV/.ENV",
)
GIT_IGNORED = ("notes-private.md", "out/build.md")
# Each a way to reach memctl's token or git's config; all must be refused as memctl's or git's.
INTERNAL = (
    ".memory/bridge.token",
    ".git/config",
    "docs/../.git/config",
    "./.memory/../.memory/bridge.token",
    "docs/token.md",  # symlink to ../.memory/bridge.token
    "docs/gitconfig.md",  # symlink to ../.git/config
    "docs/gitdir/config",  # docs/gitdir is a symlink to ../.git
    ".GIT/config",  # another file on a case-sensitive system, git's own on macOS: refused
    "sub/.git/config",  # a nested repository's
)


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    _git(root, "init", "-q")
    _git(root, "config", "memctltest.marker", GIT_MARK)
    (root / ".gitignore").write_text("notes-private.md\nout/\n")
    (root / "docs" / "guide.md").write_text("# Guide\n\nHow the release train works.\n")
    (root / ".env.example").write_text("API_KEY=\n")
    memory = root / ".memory"
    memory.mkdir()
    token = memory / "bridge.token"
    token.write_text(TOKEN_MARK + "\n")
    token.chmod(0o600)
    for name in (*SECRET_FILES, *GIT_IGNORED, ".GIT/config", "sub/.git/config"):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"the value is {SECRET_MARK}\n")
    os.symlink("../.memory/bridge.token", root / "docs" / "token.md")
    os.symlink("../.git/config", root / "docs" / "gitconfig.md")
    os.symlink("../.git", root / "docs" / "gitdir")
    return root


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(json.loads(result.content[0].text))


async def _calls(project: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    params = stdio_params(project, MEMCTL_EMBEDDING_MODEL="none")
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            return [_payload(await client.call_tool(name, args)) for name, args in calls]


def _by_file(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["file"]: r for r in result["results"]}


async def test_absorb_refuses_every_private_file_and_search_finds_none(project: Path) -> None:
    private = [*INTERNAL, *SECRET_FILES, *GIT_IGNORED]
    absorbed, *searches = await _calls(
        project,
        [
            ("absorb_files", {"files": [*private, "docs/guide.md", ".env.example"]}),
            *(("search_memory", {"query": mark}) for mark in (TOKEN_MARK, GIT_MARK, SECRET_MARK)),
            ("search_memory", {"query": "release train"}),
        ],
    )
    by_file = _by_file(absorbed)
    assert (absorbed["succeeded"], absorbed["failed"]) == (2, len(private))
    assert by_file["docs/guide.md"]["ok"] and by_file[".env.example"]["ok"]
    expected = {
        **dict.fromkeys(INTERNAL, "memctl-or-git"),
        **dict.fromkeys(SECRET_FILES, "secret-file"),
        **dict.fromkeys(GIT_IGNORED, "gitignored"),
    }
    for path, kind in expected.items():
        assert by_file[path]["ok"] is False, path
        assert by_file[path]["refusal"] == kind, (path, by_file[path])
        assert_has_reason(by_file[path]["error"])
    *leaks, found = searches
    assert [r["content"] for s in leaks for r in s["records"]] == []
    assert [r["documentName"] for r in found["records"]] == ["docs/guide.md"]


async def test_scan_sets_private_files_apart_with_reasons(project: Path) -> None:
    (scanned,) = await _calls(project, [("scan_documents", {"include": ["**"]})])
    listed = {f["relPath"] for f in scanned["files"]}
    refused = {r["relPath"]: r for r in scanned["refused"]}
    assert listed.isdisjoint(refused)
    assert {"docs/guide.md", ".env.example", ".gitignore"} <= listed
    assert set(SECRET_FILES) | set(GIT_IGNORED) | {".GIT/config"} <= set(refused)
    assert not any(p.startswith((".git/", ".memory/")) for p in listed | set(refused))
    assert scanned["total"] == len(scanned["files"])
    for entry in refused.values():
        assert_has_reason(entry["reason"])


async def test_absorb_allow_admits_named_secret_files_never_memctl_or_git(project: Path) -> None:
    (project / ".memory" / "config.toml").write_text(
        'absorb_allow = [".env", "notes-private.md", ".memory/**", ".git/**"]\n'
    )
    (absorbed,) = await _calls(
        project,
        [("absorb_files", {"files": [".env", "notes-private.md", ".env.production", *INTERNAL]})],
    )
    by_file = _by_file(absorbed)
    assert by_file[".env"]["ok"] and by_file["notes-private.md"]["ok"]
    assert by_file[".env.production"]["refusal"] == "secret-file"
    assert all(by_file[path]["refusal"] == "memctl-or-git" for path in INTERNAL)


def test_serve_refuses_the_home_directory() -> None:
    """Through the real command (`/` goes through the same check, in its unit test: a
    regression here would serve, and write memctl's files into, the real `/`)."""
    run = subprocess.run(
        [sys.executable, "-m", "memctl", "serve", "--project", str(Path.home())],
        env=bridge_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert "home directory" in run.stderr and "--project" in run.stderr, run.stderr
    assert not (Path.home() / ".memory").exists()
