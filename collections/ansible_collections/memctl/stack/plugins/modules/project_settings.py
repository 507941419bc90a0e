"""Ansible module: set the settings the inventory decides in a project's .memory/config.toml."""

from __future__ import annotations

DOCUMENTATION = r"""
module: project_settings
short_description: Set memctl settings in a project's .memory/config.toml
description:
  - Sets each given top-level key (for example C(entry_store)) in the project's
    C(.memory/config.toml), replacing the key's line where it stands or adding it; the
    user's other settings and comments stay as they are.
  - An unchanged file is not written. Supports check mode and diff mode.
  - Needs memctl importable by the target's Python.
options:
  workspace:
    description: Absolute path of the project's workspace.
    type: path
    required: true
  settings:
    description: Setting names and their values (strings).
    type: dict
    required: true
author: memctl
"""

EXAMPLES = r"""
- name: Point the project at the machine's Valkey
  memctl.stack.project_settings:
    workspace: /srv/projects/app
    settings:
      entry_store: "valkey://127.0.0.1:6379/0?prefix=app:"
"""

RETURN = r"""
path:
  description: The settings file.
  returned: always
  type: str
"""

from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.memctl import memctl_missing


def run(module: AnsibleModule) -> dict[str, Any]:
    """Apply the settings; the module's result."""
    try:
        from memctl.api.project import CONFIG, apply_settings
        from memory_bridge import ConfigError
    except ImportError as exc:
        memctl_missing(module, exc)
    workspace = Path(module.params["workspace"])
    values = {str(k): str(v) for k, v in (module.params["settings"] or {}).items()}
    try:
        changed, diff = apply_settings(workspace, values, check=module.check_mode)
    except ConfigError as exc:
        module.fail_json(msg=f"{workspace / CONFIG}: {exc}")
    result: dict[str, Any] = {"changed": changed, "path": str(workspace / CONFIG)}
    if module._diff and diff:
        result["diff"] = {"prepared": diff}
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "workspace": {"type": "path", "required": True},
            "settings": {"type": "dict", "required": True},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
