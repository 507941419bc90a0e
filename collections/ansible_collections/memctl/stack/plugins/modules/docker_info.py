"""Ansible module: what the Docker engine holds (containers, images, a network's containers),
read through the SDK; it changes nothing."""

from __future__ import annotations

from contextlib import closing
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.docker import docker_client

DOCUMENTATION = r"""
module: docker_info
short_description: Report containers (exist, run), images (present, missing) and a network's containers
description:
  - Reads the Docker engine through the Docker SDK and changes nothing, so it runs in check mode
    too (a role's probe still sets C(check_mode) to false, as every probe does).
  - A container, image or network that does not exist is reported as such, never as a failure;
    an engine that does not answer fails the task.
options:
  containers:
    description: Container names to report on (see the I(containers) return value).
    type: list
    elements: str
    default: []
  images:
    description: Image references (C(NAME:TAG) or an ID) to look for in the engine.
    type: list
    elements: str
    default: []
  network:
    description:
      - A network whose containers (running or not) to list, as C(docker ps --all --filter network=NAME)
        lists them.
    type: str
author: memctl
"""

EXAMPLES = r"""
- name: Ask whether Valkey runs
  memctl.stack.docker_info:
    containers: [memctl-valkey]
  register: valkey_info
  check_mode: false

- name: Look for an archive's images
  memctl.stack.docker_info:
    images: [debian:bookworm-slim, valkey/valkey:8.1.4]
  register: present
  check_mode: false
"""

RETURN = r"""
containers:
  description:
    - Each container of I(containers) by name, with C(exists), C(running), C(status) (the
      engine's, e.g. C(running), C(exited); C(absent) when there is no such container) and C(id).
  returned: always
  type: dict
  sample: {memctl-valkey: {exists: true, running: true, status: running, id: 3f1c...}}
images_present:
  description: The references of I(images) the engine has, in the order given.
  returned: always
  type: list
  elements: str
images_missing:
  description: The references of I(images) the engine lacks, in the order given.
  returned: always
  type: list
  elements: str
network_containers:
  description:
    - Names of the containers attached to I(network), sorted (empty without I(network), or when no
      such network exists).
  returned: always
  type: list
  elements: str
"""


def container_facts(attrs: dict[str, Any] | None) -> dict[str, Any]:
    """What a role needs to know of a container, from its inspect record (None: no such container)."""
    if attrs is None:
        return {"exists": False, "running": False, "status": "absent", "id": ""}
    state = attrs.get("State") or {}
    return {
        "exists": True,
        "running": bool(state.get("Running")),
        "status": str(state.get("Status") or "unknown"),
        "id": str(attrs.get("Id") or ""),
    }


def split_images(images: list[str], present: set[str]) -> tuple[list[str], list[str]]:
    """The references of `images` found in `present` and those not, each in the order given."""
    return [ref for ref in images if ref in present], [ref for ref in images if ref not in present]


def _get(objects: Any, name: str) -> Any:
    """The container or image `name` (with its inspect record in `.attrs`), or None."""
    from docker.errors import NotFound

    try:
        return objects.get(name)
    except NotFound:
        return None


def present_images(client: Any, images: list[str]) -> set[str]:
    """The references of `images` the engine has."""
    return {ref for ref in images if _get(client.images, ref) is not None}


def read(client: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The report, from an SDK client."""
    containers = {}
    for name in params["containers"]:
        found = _get(client.containers, name)
        containers[name] = container_facts(found.attrs if found is not None else None)
    present, missing = split_images(params["images"], present_images(client, params["images"]))
    network: list[str] = []
    if params["network"]:
        listed = client.containers.list(all=True, filters={"network": params["network"]})
        network = sorted(str(container.name) for container in listed)
    return {
        "changed": False,
        "containers": containers,
        "images_present": present,
        "images_missing": missing,
        "network_containers": network,
    }


def run(module: AnsibleModule) -> dict[str, Any]:
    """Read what the parameters ask about."""
    from docker.errors import APIError

    try:
        with closing(docker_client(module)) as client:
            return read(client, module.params)
    except APIError as exc:
        module.fail_json(msg=f"docker: {exc.explanation or exc}")
        raise


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "containers": {"type": "list", "elements": "str", "default": []},
            "images": {"type": "list", "elements": "str", "default": []},
            "network": {"type": "str"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
