"""Ansible module: register a project's memory with its MCP clients by structural merge."""

from __future__ import annotations

DOCUMENTATION = r"""
module: client_config
short_description: Register a project's memory server with its MCP clients
description:
  - Brings every client configuration file of a workspace up to date by structural merge
    (C(.mcp.json), C(.claude/settings.json), C(.cursor/mcp.json), C(.vscode/mcp.json),
    C(.agents/), skills, a C(.gitignore) block and optionally Codex's C(config.toml)).
  - The user's own entries pass through untouched; a file memctl owns outright that the user
    edited is reported as a warning and left alone; an unchanged file is not written.
  - With C(state=present), every distinct server entry is then started exactly as its file
    says (the client's variable expansion, an ordinary login PATH, the project as working
    directory) and must answer MCP; one that cannot fails the task, naming the file.
  - Supports check mode and diff mode. Needs memctl importable by the target's Python.
options:
  workspace:
    description: Absolute path of the project's workspace.
    type: path
    required: true
  clients:
    description: Clients to configure.
    type: list
    elements: str
    choices: [agents, claude, cursor, vscode]
    default: [agents, claude, cursor, vscode]
  codex_config:
    description: Path of a Codex C(config.toml) to register the server in as well.
    type: path
  server_name:
    description: Name of the MCP server in each client.
    type: str
    default: memory
  hooks:
    description: Also wire the capture hooks (C(memctl hook <event>)) into the clients.
    type: bool
    default: false
  purge:
    description:
      - With C(state=absent), also take out the C(.gitignore) block that keeps C(.memory/)
        out of git (use it when the memory is deleted too).
    type: bool
    default: false
  state:
    description:
      - C(present) registers the server; C(absent) takes memctl's entries back out of every
        client file and deletes the files memctl owns that are as it wrote them.
    type: str
    choices: [present, absent]
    default: present
author: memctl
"""

EXAMPLES = r"""
- name: Register the memory server with Claude Code and Cursor
  memctl.stack.client_config:
    workspace: /srv/projects/app
    clients: [claude, cursor]
"""

RETURN = r"""
files:
  description: >-
    One entry per file, with the action taken (created, updated, unchanged, edited-left-alone,
    link-left-alone).
  returned: always
  type: list
  elements: dict
proof:
  description: One entry per distinct server start (the files using it, ok, tools or error).
  returned: when state is present and not in check mode
  type: list
  elements: dict
"""

from dataclasses import asdict
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.memctl import memctl_missing


def run(module: AnsibleModule) -> dict[str, Any]:
    """Plan and apply the client configuration; the module's result."""
    try:
        import anyio

        from memctl.api import clients
        from memory_bridge import ConfigError, LinkRefused
    except ImportError as exc:
        memctl_missing(module, exc)
    params = module.params
    codex = Path(params["codex_config"]) if params["codex_config"] else None
    try:
        plan = clients.Plan(
            project=Path(params["workspace"]),
            server_name=params["server_name"],
            clients=frozenset(params["clients"]),
            codex_config=codex,
            hooks=params["hooks"],
        )
        if params["state"] == "present":
            changes = clients.apply(plan.project, plan, check=module.check_mode)
            changes.append(clients.install_launcher(plan, check=module.check_mode))
        else:
            changes = clients.remove(plan.project, plan, check=module.check_mode, purge=params["purge"])
    except (ConfigError, LinkRefused) as exc:
        module.fail_json(msg=str(exc))
    for change in changes:
        if change.action == "edited-left-alone":
            module.warn(f"{change.path}: edited since memctl wrote it; left alone (delete it to get it back)")
        elif change.action == "link-left-alone":
            module.warn(
                f"{change.path}: a symbolic link (or in a linked folder); memctl does not write through links"
            )
    written = [c for c in changes if c.action in ("created", "updated", "removed")]
    result: dict[str, Any] = {
        "changed": bool(written),
        "files": [{"path": str(c.path), "action": c.action} for c in changes],
    }
    if params["state"] == "present" and not module.check_mode:
        proofs = anyio.run(clients.prove, plan.project, plan.server_name, [codex] if codex else [])
        result["proof"] = [asdict(p) for p in proofs]
        if broken := [p for p in proofs if not p.ok]:
            problems = "; ".join(f"{', '.join(p.files)} runs {p.command}: {p.error}" for p in broken)
            message = f"a client cannot start memctl's server as its file says: {problems}"
            module.fail_json(msg=message, **result)
    if module._diff and written:
        result["diff"] = [{"prepared": c.diff} for c in written if c.diff]
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "workspace": {"type": "path", "required": True},
            "clients": {
                "type": "list",
                "elements": "str",
                "choices": ["agents", "claude", "cursor", "vscode"],
                "default": ["agents", "claude", "cursor", "vscode"],
            },
            "codex_config": {"type": "path"},
            "server_name": {"type": "str", "default": "memory"},
            "hooks": {"type": "bool", "default": False},
            "purge": {"type": "bool", "default": False},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
