"""Ansible module: keep one Docker container running exactly as specified."""

from __future__ import annotations

import json
import time
from contextlib import closing, suppress
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.docker import (
    HASH_LABEL,
    docker_client,
    fingerprint,
)

DOCUMENTATION = r"""
module: docker_container
short_description: Run a Docker container as specified, recreating it only when the spec changed
description:
  - Keeps container I(name) running from I(image) with the given command, environment, mounts,
    published ports, networks and user, through the Docker SDK.
  - The spec (and the ID of the image it runs) is stored in labels on the container. A container
    whose spec and image match is left alone (started if it was stopped); one that differs is
    stopped (so its server shuts down cleanly), removed and created again. A re-run therefore
    reports C(changed=false).
  - Check mode reports what would happen and changes nothing; diff shows the old and new spec
    when they differ (compared as data, whatever the order of their keys).
    Do not put secrets in I(env); mount a file that holds them instead.
options:
  name:
    description: Container name.
    type: str
    required: true
  state:
    description:
      - C(started) keeps it running; C(absent) stops it (so its server shuts down cleanly) and
        removes it; C(restarted) restarts the container as it is (a handler's restart, e.g. after
        a file it reads at start changed), and needs no I(image).
    type: str
    choices: [started, absent, restarted]
    default: started
  image:
    description: Image to run (must exist locally; build it with memctl.stack.docker_image).
    type: str
  command:
    description: Arguments after the image (the entrypoint's arguments, or the command).
    type: list
    elements: str
    default: []
  env:
    description: Environment variables (visible in C(docker inspect) and in diffs).
    type: dict
    default: {}
  mounts:
    description: Bind mounts and volumes as C(SOURCE:TARGET[:ro]).
    type: list
    elements: str
    default: []
  published:
    description: Published ports as C(HOST_IP:HOST_PORT:CONTAINER_PORT).
    type: list
    elements: str
    default: []
  networks:
    description: Networks to attach (the first at creation, the others after it).
    type: list
    elements: str
    default: []
  user:
    description: C(UID:GID) the container runs as (default the image's).
    type: str
  restart:
    description: Restart policy.
    type: str
    default: unless-stopped
  healthcheck:
    description: Health command run with C(sh -c) inside the container (default the image's).
    type: str
  labels:
    description:
      - Labels on the container (e.g. the versions it runs with, for C(memctl status)). They are
        part of the spec, so a changed label recreates the container.
    type: dict
    default: {}
  wait:
    description:
      - Seconds to wait for the container to be healthy or, without a health check, to keep
        running for two seconds. A container that exits, or is still not ready when the time is
        up, fails the task with its last lines of output.
    type: int
    default: 0
author: memctl
"""

EXAMPLES = r"""
- name: Run Valkey
  memctl.stack.docker_container:
    name: memctl-valkey
    image: valkey/valkey:8.1.4
    command: [valkey-server, --appendonly, "yes"]
    mounts: ["memctl-valkey-data:/data"]
    published: ["127.0.0.1:6379:6379"]
    networks: [memctl]
    wait: 60
"""

RETURN = r"""
container_id:
  description: ID of the container (empty in check mode when it would be created).
  returned: always
  type: str
name:
  description: Name of the container.
  returned: always
  type: str
action:
  description: What was done (or would be done in check mode).
  returned: always
  type: str
  sample: created
"""


SPEC_LABEL = "io.memctl.spec"
_STOP_SECONDS = 30
_SETTLE_SECONDS = 2.0  # how long a container without a health check must keep running
_POLL_SECONDS = 0.5
_SPEC_KEYS = ("image", "command", "env", "mounts", "published", "networks", "user", "restart", "healthcheck")


_SECOND = 1_000_000_000  # the engine counts health-check times in nanoseconds


class SpecError(ValueError):
    """A spec value that does not have the documented form."""


def _ports(published: list[str]) -> dict[str, tuple[str, int]]:
    """`HOST_IP:HOST_PORT:CONTAINER_PORT[/PROTOCOL]` entries as the engine's port bindings."""
    ports: dict[str, tuple[str, int]] = {}
    for entry in published:
        host, _, rest = entry.rpartition(":")
        host_ip, _, host_port = host.rpartition(":")
        container_port, _, protocol = rest.partition("/")
        if not (host_ip and host_port.isdigit() and container_port.isdigit()):
            raise SpecError(f"published: {entry!r} is not HOST_IP:HOST_PORT:CONTAINER_PORT")
        ports[f"{container_port}/{protocol or 'tcp'}"] = (host_ip.strip("[]"), int(host_port))
    return ports


def _restart(policy: str) -> dict[str, Any]:
    """`no`, `always`, `unless-stopped` or `on-failure[:N]` as the engine's restart policy."""
    name, _, retries = policy.partition(":")
    return {"Name": name, "MaximumRetryCount": int(retries)} if retries else {"Name": name}


def create_kwargs(spec: dict[str, Any], name: str, fp: str) -> dict[str, Any]:
    """The Docker SDK's `containers.run` arguments for a spec (detached, as `docker run -d`)."""
    labels = {HASH_LABEL: fp, SPEC_LABEL: json.dumps(spec, sort_keys=True)}
    labels.update(sorted(spec.get("labels", {}).items()))
    kwargs: dict[str, Any] = {
        "image": spec["image"],
        "command": spec["command"] or None,
        "name": name,
        "detach": True,
        "restart_policy": _restart(spec["restart"]),
        "labels": labels,
        "environment": dict(sorted(spec["env"].items())),
        "volumes": list(spec["mounts"]),
        "ports": _ports(spec["published"]),
    }
    if spec["networks"]:
        kwargs["network"] = spec["networks"][0]
    if spec["user"]:
        kwargs["user"] = spec["user"]
    if spec["healthcheck"]:
        kwargs["healthcheck"] = {
            "test": ["CMD-SHELL", spec["healthcheck"]],
            "interval": 5 * _SECOND,
            "start_period": 30 * _SECOND,
        }
    return kwargs


def _get(client: Any, name: str) -> Any:
    """The container or image `name` (with its inspect record in `.attrs`), or None."""
    from docker.errors import NotFound

    try:
        return client.get(name)
    except NotFound:
        return None


def wait_ready(module: AnsibleModule, container: Any, seconds: int) -> None:
    """Wait until the container is healthy or, without a health check, has kept running for
    `_SETTLE_SECONDS` (a command that fails at once is "running" for a moment first)."""
    deadline = time.monotonic() + seconds
    settle = min(_SETTLE_SECONDS, seconds)
    run_seen: tuple[str, float] | None = None  # (StartedAt, when first seen running) of this run
    while True:
        container.reload()
        state = container.attrs.get("State") or {}
        health = (state.get("Health") or {}).get("Status")
        now = time.monotonic()
        if not state.get("Running") and state.get("Status") in ("exited", "dead"):
            module.fail_json(msg=f"container {container.name} exited:\n{_last_lines(container)}")
        if state.get("Running") and health == "healthy":
            return
        if state.get("Running") and health is None:
            started = str(state.get("StartedAt"))
            if run_seen is None or run_seen[0] != started:
                run_seen = (started, now)
            elif now - run_seen[1] >= settle:
                return
        if now > deadline:
            restarts = state.get("RestartCount") or container.attrs.get("RestartCount") or 0
            module.fail_json(
                msg=f"container {container.name} is not ready after {seconds} s "
                f"(status: {state.get('Status')}, health: {health}, restarts: {restarts}):\n"
                f"{_last_lines(container)}{_last_probes(state)}"
            )
        time.sleep(_POLL_SECONDS)


def _last_probes(state: dict[str, Any], count: int = 3) -> str:
    """The container's last health checks, when and what each printed, for an error message."""
    lines = []
    for probe in ((state.get("Health") or {}).get("Log") or [])[-count:]:
        output = " ".join(str(probe.get("Output") or "").split())[-300:] or "(no output)"
        lines.append(f"\n  {probe.get('Start', '?')[:19]}: exit {probe.get('ExitCode')}: {output}")
    return "\nlast health checks:" + "".join(lines) if lines else ""


def _last_lines(container: Any) -> str:
    """The container's last lines of output, for an error message."""
    return str(container.logs(stdout=True, stderr=True, tail=20).decode("utf-8", errors="replace")).strip()


def _remove(container: Any) -> None:
    """Stop the container first, so its server shuts down cleanly (Valkey syncs its AOF); remove it."""
    from docker.errors import APIError

    with suppress(APIError):  # already stopped or on its way out: the removal below decides
        container.stop(timeout=_STOP_SECONDS)
    container.remove(force=True)


def run(module: AnsibleModule) -> dict[str, Any]:
    """Bring the container to the requested state (or say what that would take)."""
    from docker.errors import APIError

    try:
        with closing(docker_client(module)) as client:
            return _converge(module, client)
    except APIError as exc:
        module.fail_json(msg=f"docker: {exc.explanation or exc}")
        raise
    except SpecError as exc:
        module.fail_json(msg=str(exc))
        raise


def _restart_now(module: AnsibleModule, container: Any, name: str) -> dict[str, Any]:
    """Restart an existing container as it is, waiting for it if asked (in check mode: say so)."""
    if container is None:
        module.fail_json(msg=f"there is no container {name} on this machine to restart: create it first")
        return {}
    if not module.check_mode:
        container.restart(timeout=_STOP_SECONDS)
        if module.params["wait"] > 0:
            wait_ready(module, container, module.params["wait"])
    return {"changed": True, "name": name, "action": "restarted", "container_id": str(container.id)}


def _converge(module: AnsibleModule, client: Any) -> dict[str, Any]:
    params = module.params
    name = params["name"]
    existing = _get(client.containers, name)
    if params["state"] == "restarted":
        return _restart_now(module, existing, name)
    labels = ((existing.attrs if existing else {}).get("Config") or {}).get("Labels") or {}
    before = json.loads(labels[SPEC_LABEL]) if SPEC_LABEL in labels else ({"name": name} if existing else {})
    if params["state"] == "absent":
        if existing and not module.check_mode:
            _remove(existing)
        action = "removed" if existing else "none"
        return {
            "changed": bool(existing),
            "name": name,
            "action": action,
            "container_id": "",
            "diff": {"before": before, "after": {}},
        }
    if not params["image"]:
        module.fail_json(msg="image is required when state is started")
    spec = {key: params[key] for key in _SPEC_KEYS}
    if params["labels"]:  # absent when empty, so containers made before labels existed keep their hash
        spec["labels"] = {str(k): str(v) for k, v in params["labels"].items()}
    image = _get(client.images, params["image"])
    if image is None and not module.check_mode:
        module.fail_json(msg=f"image {params['image']} is not on this machine: build or pull it first")
    fp = fingerprint({"spec": spec, "image_id": image.id if image else "(to be built)"})
    kwargs = create_kwargs(spec, name, fp)  # a spec the engine cannot take fails even in check mode
    running = bool(((existing.attrs if existing else {}).get("State") or {}).get("Running"))
    if existing and labels.get(HASH_LABEL) == fp:
        action = "none" if running else "started"
    else:
        action = "recreated" if existing else "created"
    result: dict[str, Any] = {"changed": action != "none", "name": name, "action": action}
    if before != spec:  # compared as data, so the same spec with its keys in another order is no diff
        result["diff"] = {"before": before, "after": spec}
    current = existing
    if not module.check_mode:
        if action in ("recreated", "created"):
            if existing:
                _remove(existing)
            current = client.containers.run(**kwargs)
            for network in spec["networks"][1:]:
                client.networks.get(network).connect(current)
        elif action == "started":
            existing.start()
        if params["wait"] > 0:
            wait_ready(module, current, params["wait"])
    elif action != "none":
        current = None
    result["container_id"] = str(current.id) if current else ""
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["started", "absent", "restarted"], "default": "started"},
            "image": {"type": "str"},
            "command": {"type": "list", "elements": "str", "default": []},
            "env": {"type": "dict", "default": {}},
            "mounts": {"type": "list", "elements": "str", "default": []},
            "published": {"type": "list", "elements": "str", "default": []},
            "networks": {"type": "list", "elements": "str", "default": []},
            "user": {"type": "str"},
            "restart": {"type": "str", "default": "unless-stopped"},
            "healthcheck": {"type": "str"},
            "labels": {"type": "dict", "default": {}},
            "wait": {"type": "int", "default": 0},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
