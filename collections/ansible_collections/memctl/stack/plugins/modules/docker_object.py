"""Ansible module: a Docker network or named volume, present or absent."""

from __future__ import annotations

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.docker import DockerCLI

DOCUMENTATION = r"""
module: docker_object
short_description: Create or remove a Docker network or named volume
description:
  - Creates the network or volume I(name) when missing, removes it when I(state=absent), through
    the Docker CLI. An existing object is left as it is, so a re-run reports C(changed=false).
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


def run(module: AnsibleModule) -> dict[str, Any]:
    """Create or remove the object if needed (or say so in check mode)."""
    kind, name, wanted = module.params["kind"], module.params["name"], module.params["state"] == "present"
    docker = DockerCLI(module)
    existing = docker.inspect(kind, name)
    existed = existing is not None
    changed = existed != wanted
    if changed and not module.check_mode:
        if wanted:
            docker.run(kind, "create", name)
            existing = docker.inspect(kind, name)
        else:
            docker.run(kind, "rm", name)
            existing = None
    state = {"kind": kind, "name": name}
    return {
        "changed": changed,
        "id": str((existing or {}).get("Id") or (existing or {}).get("Name") or "") if wanted else "",
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
