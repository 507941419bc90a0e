"""The pure parts of memctl.stack's Docker modules: what a build sees, when it reruns, what runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.memctl.stack.plugins.modules.docker_container import SpecError, create_kwargs
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


def test_a_container_spec_becomes_docker_sdk_arguments() -> None:
    spec = {
        "image": "memctl-bridge:local",
        "command": ["--log-level", "INFO"],
        "env": {"MEMCTL_PROJECT": "/w"},
        "mounts": ["/w:/w:ro"],
        "published": ["127.0.0.1:3107:3106", "[::1]:3107:3106/udp"],
        "networks": ["memctl", "other"],
        "user": "1000:1000",
        "restart": "unless-stopped",
        "healthcheck": None,
    }
    kwargs = create_kwargs(spec, "memctl-bridge-app", "abc")
    assert kwargs == {
        "image": "memctl-bridge:local",
        "command": ["--log-level", "INFO"],
        "name": "memctl-bridge-app",
        "detach": True,
        "restart_policy": {"Name": "unless-stopped"},
        "labels": {"io.memctl.spec-hash": "abc", "io.memctl.spec": json.dumps(spec, sort_keys=True)},
        "environment": {"MEMCTL_PROJECT": "/w"},
        "volumes": ["/w:/w:ro"],
        "ports": {"3106/tcp": ("127.0.0.1", 3107), "3106/udp": ("::1", 3107)},
        "network": "memctl",  # further networks are connected after creation
        "user": "1000:1000",
    }
    checked = create_kwargs({**spec, "healthcheck": "true", "restart": "on-failure:3"}, "c", "abc")
    assert checked["healthcheck"] == {"test": ["CMD-SHELL", "true"], "interval": 5e9, "start_period": 30e9}
    assert checked["restart_policy"] == {"Name": "on-failure", "MaximumRetryCount": 3}


@pytest.mark.parametrize("published", ["3107:3106", "127.0.0.1:x:3106", "3106"])
def test_a_published_port_of_another_form_is_refused(published: str) -> None:
    spec = {"image": "i", "command": [], "env": {}, "mounts": [], "published": [published]}
    spec |= {"networks": [], "user": None, "restart": "no", "healthcheck": None}
    with pytest.raises(SpecError, match="HOST_IP:HOST_PORT:CONTAINER_PORT"):
        create_kwargs(spec, "c", "abc")
