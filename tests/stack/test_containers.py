"""`memctl status`/`logs` read containers through the Docker SDK, against a real engine.

The image is the host's own `sh` and `sleep` (`tiny_image`: nothing is pulled or built), so
this runs in seconds where the stack tests take minutes.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator

import docker
import pytest

from memctl.operations._containers import (
    DIFY_VERSION_LABEL,
    bridge_container,
    bridge_name,
    container_logs,
    follow_logs,
)

from .conftest import TINY_IMAGE

pytestmark = [pytest.mark.docker]


@pytest.fixture
def containers(tiny_image: str) -> Iterator[tuple[str, str]]:
    slug = f"sdk-{time.monotonic_ns()}"
    valkey = f"memctl-test-valkey-{slug}"
    client = docker.from_env()
    started = [
        client.containers.run(TINY_IMAGE, ["/bin/sleep", "300"], name=valkey, detach=True),
        client.containers.run(
            TINY_IMAGE,
            [
                "/bin/sh",
                "-c",
                "echo out one; echo err one >&2; echo out two; sleep 2; while :; do echo tick; sleep 1; done",
            ],
            name=bridge_name(slug),
            environment={"MEMCTL_ENTRY_STORE": f"valkey://{valkey}:6379/0", "SECRET": "not read"},
            labels={DIFY_VERSION_LABEL: "1.16.0"},
            detach=True,
        ),
    ]
    try:
        yield slug, valkey
    finally:
        for container in started:
            container.remove(force=True)
        client.close()


def test_status_reads_the_bridge_and_its_valkey(containers: tuple[str, str]) -> None:
    slug, _ = containers
    report = bridge_container(slug)
    assert report["container"] == bridge_name(slug) and report["status"] == "running"
    assert report["health"] == "running", "no health check: its state stands in"
    assert report["versions"] == {"bridge": TINY_IMAGE, "valkey": TINY_IMAGE, "dify": "1.16.0"}
    assert report["image_id"].startswith("sha256:") and report["started_at"]
    assert bridge_container(f"{slug}-gone") == {
        "container": bridge_name(f"{slug}-gone"),
        "health": "missing",
        "error": f"no container {bridge_name(slug)}-gone: run memctl up",
    }


def test_logs_give_both_streams_and_follow_new_lines(containers: tuple[str, str]) -> None:
    slug, _ = containers
    name = bridge_name(slug)
    deadline = time.monotonic() + 10
    while len(lines := container_logs(name, 10) or []) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert {"out one", "err one", "out two"} <= set(lines), "stdout and stderr"
    assert len(container_logs(name, 1) or []) == 1
    following = follow_logs(name)
    assert next(following) == "tick"
    following.close()
    assert container_logs(f"{name}-gone", 10) is None
    assert list(follow_logs(f"{name}-gone")) == []


# Also proves no socket is leaked: pytest turns an unclosed socket's ResourceWarning into an error.
def test_an_engine_that_does_not_answer_is_not_a_missing_container(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    report = bridge_container("app")
    assert report == {
        "container": "memctl-bridge-app",
        "health": "unknown",
        "error": "the Docker engine did not answer",
    }
    assert container_logs("memctl-bridge-app", 10) is None
    gc.collect()
