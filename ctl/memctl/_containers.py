"""memctl's containers as `memctl status` and `memctl logs` see them, through the Docker CLI.

Only what a container's own record says is read: its state, health, image and labels (never
its environment, apart from the entry store URL that names the Valkey container).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

__all__ = ["DIFY_VERSION_LABEL", "bridge_container", "bridge_name", "container_logs", "follow_logs"]

DIFY_VERSION_LABEL = "io.memctl.dify-version"
_TIMEOUT = 20


def bridge_name(slug: str) -> str:
    """The name of a stack project's bridge container."""
    return f"memctl-bridge-{slug}"


def _docker() -> str | None:
    return shutil.which("docker")


def _inspect(docker: str, name: str) -> dict[str, Any] | None:
    result = subprocess.run(
        [docker, "container", "inspect", name], capture_output=True, text=True, check=False, timeout=_TIMEOUT
    )
    if result.returncode != 0:
        return None
    items = json.loads(result.stdout)
    return dict(items[0]) if items else None


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
    docker = _docker()
    if docker is None:
        return {**report, "health": "unknown", "error": "docker is not installed on this machine"}
    try:
        container = _inspect(docker, name)
    except subprocess.TimeoutExpired:
        return {**report, "health": "unknown", "error": "the Docker engine did not answer"}
    if container is None:
        return {**report, "health": "missing", "error": f"no container {name}: run memctl up"}
    state = container.get("State") or {}
    config = container.get("Config") or {}
    labels = config.get("Labels") or {}
    running = "running" if state.get("Running") else "stopped"
    report.update(
        status=state.get("Status", "unknown"),
        health=(state.get("Health") or {}).get("Status") or running,
        image=config.get("Image", ""),
        image_id=str(container.get("Image", ""))[:19],
        started_at=state.get("StartedAt"),
    )
    versions: dict[str, str | None] = {"bridge": report["image"], "valkey": None, "dify": None}
    valkey_name = _valkey_container(config.get("Env") or [])
    valkey = _inspect(docker, valkey_name) if valkey_name else None
    if valkey is not None:
        versions["valkey"] = (valkey.get("Config") or {}).get("Image")
    versions["dify"] = labels.get(DIFY_VERSION_LABEL)
    report["versions"] = versions
    return report


def container_logs(name: str, lines: int) -> list[str] | None:
    """The container's last lines of output (stdout and stderr); None when it does not exist."""
    docker = _docker()
    if docker is None:
        return None
    result = subprocess.run(
        [docker, "logs", "--tail", str(lines), name],
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
        timeout=_TIMEOUT,
    )
    if result.returncode != 0:
        return None
    return (result.stdout + result.stderr).splitlines()


def follow_logs(name: str) -> Iterator[str]:
    """The container's new output, line by line, until it stops (or the caller stops reading)."""
    docker = _docker()
    if docker is None:
        return
    process = subprocess.Popen(
        [docker, "logs", "--follow", "--tail", "0", name],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    assert process.stdout is not None
    try:
        for line in process.stdout:
            yield line.rstrip("\n")
    finally:
        process.terminate()
        process.wait()
