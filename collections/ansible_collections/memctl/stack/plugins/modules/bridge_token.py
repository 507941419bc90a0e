"""Ansible module: make sure a bridge bearer token exists, private, without ever showing it."""

from __future__ import annotations

DOCUMENTATION = r"""
module: bridge_token
short_description: Generate a bridge bearer token once and keep it private
description:
  - Creates the token's directory (mode 0700) and, if the file is missing or empty, writes a
    new random token (43 letters and digits, about 256 bits) with mode 0600, atomically.
  - An existing token is kept; only its mode and its directory's mode are corrected.
  - The token never appears in the result, a log or a diff. Supports check mode.
options:
  path:
    description: Where the token lives.
    type: path
    required: true
author: memctl
"""

EXAMPLES = r"""
- name: Generate the project's bridge token once
  memctl.stack.bridge_token:
    path: /srv/projects/app/.memory/bridge.token
"""

RETURN = r"""
created:
  description: Whether a new token was written.
  returned: always
  type: bool
"""

import stat
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.memctl import memctl_missing


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def ensure_token(path: Path, check: bool) -> dict[str, Any]:
    """Bring the directory and token to the desired state; what changed."""
    directory = path.parent
    fixes = {
        "directory": not directory.is_dir() or _mode(directory) != 0o700,
        "created": not path.is_file() or path.stat().st_size == 0,
    }
    fixes["mode"] = not fixes["created"] and _mode(path) != 0o600
    if not check:
        from memory_bridge import new_token, set_mode, write_atomically

        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if fixes["directory"]:
            set_mode(directory, 0o700)  # never through a link
        if fixes["created"]:
            write_atomically(path, new_token() + "\n", mode=0o600)
        elif fixes["mode"]:
            set_mode(path, 0o600)
    return {"changed": any(fixes.values()), "created": fixes["created"]}


def main() -> None:
    module = AnsibleModule(
        argument_spec={"path": {"type": "path", "required": True}}, supports_check_mode=True
    )
    try:
        from memory_bridge import LinkRefused  # the token and its writing are the bridge's own
    except ImportError as exc:
        memctl_missing(module, exc)
    try:
        result = ensure_token(Path(module.params["path"]), module.check_mode)
    except LinkRefused as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
