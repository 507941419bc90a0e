"""memctl's containers as `memctl status` and `memctl logs` see them, through the Docker SDK.

The client finds the engine as the Docker CLI does (`DOCKER_HOST`, else the current CLI
context). Only what a container's own record says is read: its state, health, image and
labels (never its environment, apart from the entry store URL that names the Valkey
container).
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator
from contextlib import closing
from typing import Any
from urllib.parse import urlsplit

import docker
from docker.errors import DockerException, NotFound
from docker.models.containers import Container
from requests.exceptions import RequestException

__all__ = ["DIFY_VERSION_LABEL", "bridge_container", "bridge_name", "container_logs", "follow_logs"]

DIFY_VERSION_LABEL = "io.memctl.dify-version"
_TIMEOUT = 20
_UNREACHABLE = (DockerException, RequestException)  # an engine that is down or does not answer


def bridge_name(slug: str) -> str:
    """The name of a stack project's bridge container."""
    return f"memctl-bridge-{slug}"


def _client() -> docker.DockerClient | None:
    """A client of this machine's Docker engine (the caller closes it), or None if none answers.

    docker-py drops the socket of a refused connection without closing it, inside reference
    cycles; the failed attempt is collected here, its expected ResourceWarning silenced.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            return docker.from_env(timeout=_TIMEOUT)
        except _UNREACHABLE:
            pass
        gc.collect()
    return None


def _container(client: docker.DockerClient, name: str) -> Container | None:
    try:
        return client.containers.get(name)
    except NotFound:
        return None


def _valkey_container(env: list[str]) -> str | None:
    """The host of the bridge's entry store URL: the Valkey container on the shared network."""
    for item in env:
        key, _, value = item.partition("=")
        if key == "MEMCTL_ENTRY_STORE" and value.startswith("valkey"):
            return urlsplit(value).hostname
    return None


def bridge_container(slug: str) -> dict[str, Any]:
    """A stack project's bridge container: state, health and the versions of the stack it runs on."""
    name = bridge_name(slug)
    report: dict[str, Any] = {"container": name}
    client = _client()
    if client is None:
        return {**report, "health": "unknown", "error": "the Docker engine did not answer"}
    try:
        with closing(client):
            container = _container(client, name)
            record = container.attrs if container is not None else None
            config = (record or {}).get("Config") or {}
            valkey_name = _valkey_container(config.get("Env") or [])
            valkey = _container(client, valkey_name) if valkey_name else None
    except _UNREACHABLE:
        return {**report, "health": "unknown", "error": "the Docker engine did not answer"}
    if record is None:
        return {**report, "health": "missing", "error": f"no container {name}: run memctl up"}
    state = record.get("State") or {}
    labels = config.get("Labels") or {}
    running = "running" if state.get("Running") else "stopped"
    report.update(
        status=state.get("Status", "unknown"),
        health=(state.get("Health") or {}).get("Status") or running,
        image=config.get("Image", ""),
        image_id=str(record.get("Image", ""))[:19],
        started_at=state.get("StartedAt"),
    )
    versions: dict[str, str | None] = {"bridge": report["image"], "valkey": None, "dify": None}
    if valkey is not None:
        versions["valkey"] = (valkey.attrs.get("Config") or {}).get("Image")
    versions["dify"] = labels.get(DIFY_VERSION_LABEL)
    report["versions"] = versions
    return report


def container_logs(name: str, lines: int) -> list[str] | None:
    """The container's last lines of output (stdout and stderr); None when it does not exist."""
    client = _client()
    if client is None:
        return None
    try:
        with closing(client):
            container = _container(client, name)
            if container is None:
                return None
            output: bytes = container.logs(stdout=True, stderr=True, tail=lines)
    except _UNREACHABLE:
        return None
    return output.decode("utf-8", errors="replace").splitlines()


def follow_logs(name: str) -> Iterator[str]:
    """The container's new output, line by line, until it stops (or the caller stops reading)."""
    client = _client()
    if client is None:
        return
    with closing(client):
        container = _container(client, name)
        if container is None:
            return
        pending = b""
        for chunk in container.logs(stdout=True, stderr=True, stream=True, follow=True, tail=0):
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield line.decode("utf-8", errors="replace")
        if pending:
            yield pending.decode("utf-8", errors="replace")
