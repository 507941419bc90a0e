"""Ansible module: report one project's memory on its machine, as `memctl status` does there."""

from __future__ import annotations

DOCUMENTATION = r"""
module: project_status
short_description: Report a project's stores, clients and bridge, changing nothing
description:
  - Reports what C(memctl status) does for one project, on the machine it lives on, namely each
    store's health and size, writes waiting for Dify, the capture pipeline, the versions, each
    client config proven by starting its server and, for a stack project, its bridge container.
  - A project that is not healthy is reported (C(status.ok) false), not failed; so is one whose
    settings or stores cannot be opened (C(status.error)); with O(require_healthy), it fails
    saying what is wrong. Never changes anything.
options:
  project:
    description: The project as the inventory describes it (slug, workspace, mode, ...).
    type: dict
    required: true
  require_healthy:
    description: Fail unless the project is healthy (C(memctl upgrade) checks each machine so).
    type: bool
    default: false
author: memctl
"""

EXAMPLES = r"""
- name: Report the project
  memctl.stack.project_status:
    project: {slug: app, workspace: /srv/src/app, mode: embedded}
"""

RETURN = r"""
status:
  description: The project's report, as C(memctl status --json) prints it.
  returned: always
  type: dict
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.memctl import memctl_missing


def report(module: Any, project: dict[str, Any]) -> dict[str, Any]:
    """The project's status on this machine; an error opening it becomes part of the report."""
    try:
        from memctl.api.project import Project
        from memctl.api.status import project_status
        from memory_bridge import ConfigError, StoreError
    except ImportError as exc:
        memctl_missing(module, exc)
    parsed = Project.model_validate(project)
    try:
        result: dict[str, Any] = project_status(parsed)
    except (ConfigError, StoreError) as exc:
        return {"slug": parsed.slug, "mode": parsed.mode, "ok": False, "error": str(exc)}
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "project": {"type": "dict", "required": True},
            "require_healthy": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    status = report(module, module.params["project"])
    if module.params["require_healthy"] and not status["ok"]:
        from memctl.api.status import problems  # imported above by report()

        found = problems(status) or ["not healthy"]
        module.fail_json(msg=f"{status['slug']} is not healthy: {'; '.join(found)}", status=status)
    module.exit_json(changed=False, status=status)


if __name__ == "__main__":
    main()
