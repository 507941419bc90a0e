"""memctl.stack.docker_object through the Docker SDK, against a real engine (no image needed)."""

from __future__ import annotations

import time
from contextlib import closing

import docker
import pytest

from ansible_collections.memctl.stack.plugins.modules.docker_object import run

from .conftest import FakeModule

pytestmark = [pytest.mark.docker]


@pytest.mark.parametrize("kind", ["network", "volume"])
def test_an_object_is_created_once_and_removed_once(docker_engine: None, kind: str) -> None:
    name = f"memctl-test-object-{time.monotonic_ns()}"
    with closing(docker.from_env()) as client:
        objects = client.networks if kind == "network" else client.volumes
        planned = run(FakeModule(check_mode=True, kind=kind, name=name, state="present"))
        assert planned == {
            "changed": True,
            "id": "",
            "diff": {"before": {}, "after": {"kind": kind, "name": name}},
        }
        assert not [o for o in objects.list() if o.name == name], "check mode creates nothing"
        created = run(FakeModule(kind=kind, name=name, state="present"))
        assert created["changed"] is True and created["id"] == (objects.get(name).id)
        again = run(FakeModule(kind=kind, name=name, state="present"))
        assert again["changed"] is False and again["id"] == created["id"]
        removed = run(FakeModule(kind=kind, name=name, state="absent"))
        assert removed == {
            "changed": True,
            "id": "",
            "diff": {"before": {"kind": kind, "name": name}, "after": {}},
        }
        assert run(FakeModule(kind=kind, name=name, state="absent"))["changed"] is False
