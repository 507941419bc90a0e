"""memctl.stack.docker_info, docker_exec, docker_container's restart and docker_image's archive
loading through the Docker SDK, against a real engine and the tiny image (what the valkey,
bridge and docker roles and the upgrade playbook use instead of the docker CLI)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import docker
import pytest

from ansible_collections.memctl.stack.plugins.modules.docker_container import run as container_run
from ansible_collections.memctl.stack.plugins.modules.docker_exec import run as exec_run
from ansible_collections.memctl.stack.plugins.modules.docker_image import run as image_run
from ansible_collections.memctl.stack.plugins.modules.docker_info import run as info_run

from .conftest import FakeModule, ModuleFailed

pytestmark = [pytest.mark.docker]


@pytest.fixture
def engine(docker_engine: None) -> Iterator[tuple[Any, str]]:
    """An SDK client and a run id; every container, network and tag named with it goes afterwards."""
    run_id = f"{time.monotonic_ns()}"
    with closing(docker.from_env()) as client:
        try:
            yield client, run_id
        finally:
            for container in client.containers.list(
                all=True, filters={"name": f"memctl-test-probe-{run_id}"}
            ):
                container.remove(force=True)
            for network in client.networks.list(names=[f"memctl-test-probe-net-{run_id}"]):
                network.remove()
            if client.images.list(name=f"memctl-test-probe-archive:{run_id}"):
                client.images.remove(f"memctl-test-probe-archive:{run_id}")  # an untag


def _info(**params: Any) -> dict[str, Any]:
    return info_run(FakeModule(**({"containers": [], "images": [], "network": None} | params)))


def test_info_reports_running_stopped_and_absent_containers_and_a_networks_members(
    tiny_image: str, engine: tuple[Any, str]
) -> None:
    client, run_id = engine
    network = client.networks.create(f"memctl-test-probe-net-{run_id}")
    running, stopped, absent = (f"memctl-test-probe-{run_id}-{n}" for n in ("run", "stop", "none"))
    client.containers.run(tiny_image, ["/bin/sleep", "300"], name=running, detach=True, network=network.name)
    client.containers.create(tiny_image, ["/bin/sleep", "300"], name=stopped, network=network.name)
    report = _info(containers=[running, stopped, absent], images=[tiny_image, "memctl-none:0"])
    facts = report["containers"]
    assert (facts[running]["running"], facts[running]["status"]) == (True, "running")
    assert (facts[stopped]["exists"], facts[stopped]["running"], facts[stopped]["status"]) == (
        True,
        False,
        "created",
    )
    assert facts[absent] == {"exists": False, "running": False, "status": "absent", "id": ""}
    assert (report["images_present"], report["images_missing"]) == ([tiny_image], ["memctl-none:0"])
    assert report["changed"] is False
    assert _info(network=network.name)["network_containers"] == sorted([running, stopped])
    assert _info(network=f"memctl-test-probe-net-{run_id}-none")["network_containers"] == []


def test_exec_runs_argv_as_given_and_a_failure_says_what_it_printed(
    tiny_image: str, engine: tuple[Any, str]
) -> None:
    client, run_id = engine
    name = f"memctl-test-probe-{run_id}"
    client.containers.run(tiny_image, ["/bin/sleep", "300"], name=name, detach=True)
    script = 'echo out; echo "it was $1" >&2; exit ${2:-0}'
    ok = exec_run(FakeModule(container=name, argv=["/bin/sh", "-c", script, "sh", "a b"]))
    assert (ok["rc"], ok["stdout"], ok["stderr"], ok["changed"]) == (0, "out", "it was a b", True)
    with pytest.raises(ModuleFailed, match=f"^/bin/sh exited 3 in container {name}:\nit was x$"):
        exec_run(FakeModule(container=name, argv=["/bin/sh", "-c", script, "sh", "x", "3"]))
    with pytest.raises(
        ModuleFailed, match=f"docker exec /bin/nothing in container {name} failed|exited 12[67]"
    ):
        exec_run(FakeModule(container=name, argv=["/bin/nothing"]))
    client.containers.get(name).stop(timeout=1)
    with pytest.raises(ModuleFailed, match=f"container {name} is exited, not running: start it first"):
        exec_run(FakeModule(container=name, argv=["/bin/sh", "-c", "true"]))
    with pytest.raises(ModuleFailed, match=f"there is no container {name}-none on this machine"):
        exec_run(FakeModule(container=f"{name}-none", argv=["/bin/sh", "-c", "true"]))


def test_an_archive_is_loaded_only_when_one_of_its_images_is_missing(
    tiny_image: str, engine: tuple[Any, str], tmp_path: Path
) -> None:
    client, run_id = engine
    tag = f"memctl-test-probe-archive:{run_id}"
    client.images.get(tiny_image).tag("memctl-test-probe-archive", run_id)
    archive = tmp_path / "images.tar"
    with archive.open("wb") as out:
        for chunk in client.api.get_image(tag):
            out.write(chunk)
    params = {"archive": str(archive), "images": [tiny_image, tag], "name": None, "context": None}

    present = image_run(FakeModule(**params))
    assert (present["changed"], present["missing"], present["loaded"]) == (False, [], [])
    client.images.remove(tag)  # an untag: the tiny image keeps its own
    planned = image_run(FakeModule(check_mode=True, **(params | {"archive": str(tmp_path / "not-yet.tar")})))
    assert (planned["changed"], planned["missing"], planned["loaded"]) == (True, [tag], [])
    assert not client.images.list(name=tag), "check mode loads nothing"
    with pytest.raises(
        ModuleFailed, match=r"not-yet\.tar is not a file on this machine: copy it there first"
    ):
        image_run(FakeModule(**(params | {"archive": str(tmp_path / "not-yet.tar")})))
    loaded = image_run(FakeModule(**params))
    assert (loaded["changed"], loaded["missing"]) == (True, [tag]) and tag in loaded["loaded"]
    assert loaded["diff"] == {"before": {"images": [tiny_image]}, "after": {"images": [tiny_image, tag]}}
    assert image_run(FakeModule(**params))["changed"] is False
    with pytest.raises(ModuleFailed, match=f"the engine still lacks memctl-none-{run_id}:0"):
        image_run(FakeModule(**(params | {"images": [tag, f"memctl-none-{run_id}:0"]})))


def test_restarted_restarts_a_container_as_it_is_and_a_missing_one_is_named(
    tiny_image: str, engine: tuple[Any, str]
) -> None:
    client, run_id = engine
    name = f"memctl-test-probe-{run_id}"
    client.containers.run(tiny_image, ["/bin/sleep", "300"], name=name, detach=True)
    started = client.containers.get(name).attrs["State"]["StartedAt"]
    planned = container_run(FakeModule(check_mode=True, **_restart_params(name)))
    assert (planned["changed"], planned["action"]) == (True, "restarted")
    assert client.containers.get(name).attrs["State"]["StartedAt"] == started, "check mode restarts nothing"
    done = container_run(FakeModule(**_restart_params(name)))
    after = client.containers.get(name)
    assert (done["changed"], done["action"], done["container_id"]) == (True, "restarted", after.id)
    assert after.status == "running" and after.attrs["State"]["StartedAt"] != started
    with pytest.raises(ModuleFailed, match=f"there is no container {name}-none on this machine to restart"):
        container_run(FakeModule(**_restart_params(f"{name}-none")))


def _restart_params(name: str) -> dict[str, Any]:
    """docker_container's parameters for a handler's restart (its defaults, as Ansible fills them)."""
    return {
        "name": name,
        "state": "restarted",
        "image": None,
        "command": [],
        "env": {},
        "mounts": [],
        "published": [],
        "networks": [],
        "user": None,
        "restart": "unless-stopped",
        "healthcheck": None,
        "labels": {},
        "wait": 0,
    }
