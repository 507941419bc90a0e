"""The pure parts of memctl.stack's Docker modules: what a build sees, when it reruns, what runs."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ansible_collections.memctl.stack.plugins.modules.docker_container import create_args
from ansible_collections.memctl.stack.plugins.modules.docker_image import (
    context_sources,
    included_files,
    inputs_hash,
)


@pytest.fixture
def context(tmp_path: Path) -> Path:
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "mod.pyc").write_bytes(b"\0")
    (tmp_path / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "secret.env").write_text("not for the build\n")
    return tmp_path


def test_the_build_sees_only_included_files_without_bytecode(context: Path) -> None:
    files = included_files(context, ["pyproject.toml", "pkg"])
    assert files == [Path("pkg/mod.py"), Path("pyproject.toml")]


def test_a_missing_include_is_named(context: Path) -> None:
    with pytest.raises(FileNotFoundError, match="include: docs is not in"):
        included_files(context, ["docs"])


def _hash(context: Path, args: dict[str, str] | None = None, extra: dict[str, str] | None = None) -> str:
    files = included_files(context, ["pyproject.toml", "pkg"])
    return inputs_hash(context_sources(context, files, "Dockerfile", extra or {}), args or {}, "base-id")


def test_the_hash_follows_contents_modes_args_and_extra_files(
    context: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    first = _hash(context)
    assert _hash(context) == first
    (context / "secret.env").write_text("changed, but not included\n")
    assert _hash(context) == first
    (context / "pkg" / "mod.py").write_text("x = 2\n")
    changed = _hash(context)
    assert changed != first
    (context / "pkg" / "mod.py").chmod(0o755)
    assert _hash(context) != changed
    assert _hash(context, args={"A": "1"}) != _hash(context)
    ca = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.write_text("cert\n")
    assert _hash(context, extra={"bridge/build-ca.pem": str(ca)}) != _hash(context)


def test_a_container_spec_becomes_docker_run_arguments() -> None:
    spec = {
        "image": "memctl-bridge:local",
        "command": ["--log-level", "INFO"],
        "env": {"MEMCTL_PROJECT": "/w"},
        "mounts": ["/w:/w:ro"],
        "published": ["127.0.0.1:3107:3106"],
        "networks": ["memctl", "other"],
        "user": "1000:1000",
        "restart": "unless-stopped",
        "healthcheck": None,
    }
    args = create_args(spec, "memctl-bridge-app", "abc")
    assert args[:6] == ["run", "--detach", "--name", "memctl-bridge-app", "--restart", "unless-stopped"]
    assert args[-3:] == ["memctl-bridge:local", "--log-level", "INFO"]
    pairs = list(itertools.pairwise(args))
    for pair in [
        ("--env", "MEMCTL_PROJECT=/w"),
        ("--volume", "/w:/w:ro"),
        ("--publish", "127.0.0.1:3107:3106"),
        ("--network", "memctl"),
        ("--user", "1000:1000"),
        ("--label", "io.memctl.spec-hash=abc"),
    ]:
        assert pair in pairs
    assert "other" not in args  # further networks are connected after creation
    assert "--health-cmd" not in args
