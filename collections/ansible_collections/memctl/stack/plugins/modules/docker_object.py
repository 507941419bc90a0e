"""Ansible module: a Docker network or named volume, present or absent."""

from __future__ import annotations

from contextlib import closing
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.docker import docker_client

DOCUMENTATION = r"""
module: docker_object
short_description: Create or remove a Docker network or named volume
description:
  - Creates the network or volume I(name) when missing, removes it when I(state=absent), through
    the Docker SDK. An existing object is left as it is, so a re-run reports C(changed=false).
  - Supports check mode and diff.
options:
  kind:
    description: What kind of object.
    type: str
    choices: [network, volume]
    required: true
  name:
    description: Its name.
    type: str
    required: true
  state:
    description: Whether it should exist.
    type: str
    choices: [present, absent]
    default: present
author: memctl
"""

EXAMPLES = r"""
- name: The network memctl's containers share
  memctl.stack.docker_object:
    kind: network
    name: memctl
"""

RETURN = r"""
id:
  description: ID of the object (empty when absent, or in check mode before it exists).
  returned: always
  type: str
"""


def _get(objects: Any, name: str) -> Any:
    """The network or volume `name`, or None."""
    from docker.errors import NotFound

    try:
        return objects.get(name)
    except NotFound:
        return None


def run(module: AnsibleModule) -> dict[str, Any]:
    """Create or remove the object if needed (or say so in check mode)."""
    from docker.errors import APIError

    kind, name, wanted = module.params["kind"], module.params["name"], module.params["state"] == "present"
    with closing(docker_client(module)) as client:
        objects = client.networks if kind == "network" else client.volumes
        existing = _get(objects, name)
        existed = existing is not None
        changed = existed != wanted
        if changed and not module.check_mode:
            try:
                if wanted:
                    existing = objects.create(name) if kind == "network" else objects.create(name=name)
                else:
                    existing.remove()
                    existing = None
            except APIError as exc:
                action = "create" if wanted else "rm"
                module.fail_json(msg=f"docker {kind} {action} failed: {exc.explanation or exc}")
    attrs = existing.attrs if existing is not None else {}
    state = {"kind": kind, "name": name}
    return {
        "changed": changed,
        "id": str(attrs.get("Id") or attrs.get("Name") or "") if wanted else "",
        "diff": {"before": state if existed else {}, "after": state if wanted else {}},
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "kind": {"type": "str", "choices": ["network", "volume"], "required": True},
            "name": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
