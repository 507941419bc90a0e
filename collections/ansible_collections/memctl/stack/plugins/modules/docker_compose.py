"""Ansible module: a Docker Compose v2 project, validated and reported, and brought up, stopped
or taken down; or, without a project, the Compose version."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.compose import (
    Compose,
    Project,
    Snapshot,
    events,
    snapshot,
)
from ansible_collections.memctl.stack.plugins.module_utils.docker import docker_client

DOCUMENTATION = r"""
module: docker_compose
short_description: Validate, report on, and bring up, stop or take down a Docker Compose v2 project
description:
  - Runs Compose v2, the C(docker compose) CLI plugin (Compose has no SDK), in I(project_src),
    where the compose file and its C(.env) are; reads what the project holds in the engine
    through the Docker SDK, by the labels Compose puts on its containers, networks and volumes.
  - Every run validates the project first (C(docker compose config)); an invalid compose file
    or C(.env) fails the task with Compose's own message.
  - Without I(state) the module changes nothing and reports the project (its services, their
    images, which services run). With I(state), C(changed) is true when the project's containers
    (or their states), networks or volumes differ after the command from before it.
  - Without I(project_src) it reports only the Compose version, and fails when Compose is missing.
  - Check mode runs the probes for real and predicts C(changed) (C(up --dry-run) for
    I(state=present)).
options:
  project_src:
    description: The project directory (the compose file and C(.env) Compose reads there).
    type: path
  state:
    description:
      - C(present) runs C(docker compose up --detach); C(stopped) C(docker compose stop); C(absent)
        C(docker compose down) (containers and networks go, volumes stay).
      - Omitted, the project is only validated and reported.
    type: str
    choices: [present, stopped, absent]
author: memctl
"""

EXAMPLES = r"""
- name: Validate Dify's Compose project and list its services and images
  memctl.stack.docker_compose:
    project_src: /opt/dify/docker
  register: dify_compose
  check_mode: false

- name: Start Dify
  memctl.stack.docker_compose:
    project_src: /opt/dify/docker
    state: present

- name: Ask whether Compose v2 is there (its report has a version only when it is)
  memctl.stack.docker_compose:
  register: compose
  failed_when: false
  check_mode: false
"""

RETURN = r"""
version:
  description: Compose's version (C(docker compose version --short)).
  returned: always
  type: str
  sample: 2.40.3
project:
  description: The project's name, as Compose derives it (C(name:), C(COMPOSE_PROJECT_NAME), the directory).
  returned: with project_src
  type: str
services:
  description: The project's services (those its active profiles enable), sorted.
  returned: with project_src
  type: list
  elements: str
images:
  description: The images its services run (C(docker compose config --images)), each once, in Compose's order.
  returned: with project_src
  type: list
  elements: str
running_services:
  description: The services with a running container, sorted (after the command, or before it in check mode).
  returned: with project_src
  type: list
  elements: str
containers:
  description: The project's containers (one-off runs aside), with C(name), C(service), C(state) and C(id).
  returned: with project_src
  type: list
  elements: dict
actions:
  description:
    - Compose's events that changed something (or would, in check mode), e.g.
      C(Container dify-api-1 Recreate).
  returned: with project_src
  type: list
  elements: str
"""

COMMANDS = {"present": ("up", "--detach"), "stopped": ("stop",), "absent": ("down",)}


def predict(compose: Compose, state: str, before: Snapshot) -> tuple[bool, list[str]]:
    """Whether the command for `state` would change the project, and Compose's planned events."""
    if state == "present":
        _, err = compose.run("up", "--detach", "--dry-run", problem="docker compose up --dry-run failed")
        planned = events(err)
        return bool(planned), planned
    if state == "stopped":
        return bool(before.running_services()), []
    return bool(before.containers or before.networks), []


def converge(module: AnsibleModule, compose: Compose, project: Project) -> dict[str, Any]:
    """Apply `state` (or predict it in check mode) and report the project."""
    from docker.errors import APIError

    state = module.params["state"]
    try:
        with closing(docker_client(module)) as client:
            before = snapshot(client, project.name)
            after, changed, actions = before, False, list[str]()
            if state is not None and module.check_mode:
                changed, actions = predict(compose, state, before)
            elif state is not None:
                _, err = compose.run(*COMMANDS[state], problem=f"docker compose {COMMANDS[state][0]} failed")
                after = snapshot(client, project.name)
                changed, actions = after.key() != before.key(), events(err)
    except APIError as exc:
        module.fail_json(msg=f"docker: {exc.explanation or exc}")
        raise
    return {
        "changed": changed,
        "project": project.name,
        "services": project.services,
        "images": project.images,
        "running_services": after.running_services(),
        "containers": after.containers,
        "actions": actions,
    }


def run(module: AnsibleModule) -> dict[str, Any]:
    """The Compose version, and with a project, its report after applying `state`."""
    src, state = module.params["project_src"], module.params["state"]
    if src is None and state is not None:
        module.fail_json(msg=f"state={state} needs project_src, the Compose project's directory")
    if src is not None and not Path(src).is_dir():
        module.fail_json(msg=f"project_src: {src} is not a directory")
    compose = Compose(module, src)
    result: dict[str, Any] = {"changed": False, "version": compose.version()}
    if src is None:
        return result
    return result | converge(module, compose, Project.read(compose))


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "project_src": {"type": "path"},
            "state": {"type": "str", "choices": ["present", "stopped", "absent"]},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
