"""Ansible module: create and migrate a project's memory stores, then prove them over MCP."""

from __future__ import annotations

DOCUMENTATION = r"""
module: memory_store
short_description: Create and migrate a project's memory stores and check them end to end
description:
  - Applies every pending store migration (what C(memctl migrate) applies: schemas, memory-mcp
    legacy data in Valkey, Dify metadata fields, re-embedding), each recorded in
    C(.memory/migrations.jsonl), then creates the stores if needed.
  - With I(smoke), starts C(memctl serve) with a real MCP client over stdio, saves the
    C(memctl/setup) entry (only if absent) and finds it again by search.
  - Reports changed only when a migration ran, a store was created, or the setup entry was
    saved (its vector is computed in the same run, so the next run has nothing left to do).
  - In check mode, reports what would be created or migrated and changes nothing.
options:
  workspace:
    description: Absolute path of the project's workspace.
    type: path
    required: true
  smoke:
    description: Run the MCP round trip after the stores are ready.
    type: bool
    default: true
author: memctl
"""

EXAMPLES = r"""
- name: Create, migrate and check the project's stores
  memctl.stack.memory_store:
    workspace: /srv/projects/app
"""

RETURN = r"""
entry_store:
  description: URL of the entry store (secrets removed).
  returned: success
  type: str
stores:
  description: Each embedded store with its schema version before the run and now.
  returned: always
  type: list
  elements: dict
smoke:
  description: The MCP round trip (tools, whether the setup entry was created, timings).
  returned: when smoke is true and not in check mode
  type: dict
applied:
  description: The migration steps applied (name, store, detail).
  returned: success
  type: list
  elements: dict
pending:
  description: The migration steps still pending (in check mode, what a run would apply).
  returned: always
  type: list
  elements: dict
"""

from dataclasses import asdict
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.memctl import memctl_missing


def run(module: AnsibleModule) -> dict[str, Any]:
    """Migrate and prepare the stores (or, in check mode, say what that would do)."""
    try:
        import anyio

        import memory_bridge as bridge
        from memctl.api import stores
        from memory_bridge.maintenance import migrate, plan_migrations
    except ImportError as exc:
        memctl_missing(module, exc)
    workspace = Path(module.params["workspace"])
    if not workspace.is_dir():
        module.fail_json(msg=f"workspace {workspace}: not a directory")
    try:
        settings = bridge.load_settings(project=workspace)
        if module.check_mode:
            states = stores.embedded_states(settings)
            pending = [asdict(step) for step in anyio.run(plan_migrations, settings) if step.pending]
            return {
                "changed": bool(pending) or not all(state.current for state in states),
                "stores": [_state(state, None) for state in states],
                "pending": pending,
            }
        before = stores.embedded_states(settings)
        applied, _ = anyio.run(migrate, settings)
        url = stores.prepare_stores(settings)
        pinned = bridge.pin_scope(settings)
        after = {state.kind: state.version for state in stores.embedded_states(settings)}
        result: dict[str, Any] = {
            "changed": bool(applied)
            or pinned.stores.scope != settings.stores.scope
            or any(state.version != after.get(state.kind) for state in before),
            "scope": pinned.stores.scope,
            "entry_store": url,
            "stores": [_state(state, after.get(state.kind)) for state in before],
        }
        if module.params["smoke"]:
            report = anyio.run(stores.round_trip, pinned)
            result["smoke"] = report
            if report["saved"] == "created":
                result["changed"] = True
                more, _ = anyio.run(migrate, settings)  # the setup entry's vector
                applied += more
        result["applied"] = [asdict(step) for step in applied]
        result["pending"] = []
        return result
    except bridge.MemctlError as exc:
        module.fail_json(msg=str(exc))
        raise


def _state(state: Any, now: int | None) -> dict[str, Any]:
    return {"kind": state.kind, "path": str(state.path), "version_before": state.version, "version": now}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "workspace": {"type": "path", "required": True},
            "smoke": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
