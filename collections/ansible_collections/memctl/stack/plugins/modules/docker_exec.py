"""Ansible module: run one command in a running Docker container through the SDK, as
`docker exec` does."""

from __future__ import annotations

from contextlib import closing
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.docker import docker_client

DOCUMENTATION = r"""
module: docker_exec
short_description: Run a command in a running Docker container
description:
  - Runs I(argv) in container I(container) through the Docker SDK (no shell, no TTY), as
    C(docker exec CONTAINER ARGV...) does, and returns its exit code and output.
  - A command that exits non-zero fails the task, naming the program, the container and the
    last lines it printed. So does a container that does not exist or does not run.
  - Like C(ansible.builtin.command), it reports C(changed=true) whenever the command ran, so give
    the task a C(changed_when). In check mode it runs nothing and is reported as skipped; a
    task whose command only reads (or decides what to do from C(ansible_check_mode)) sets
    C(check_mode) to false to run it in check mode too.
options:
  container:
    description: Name or ID of the container.
    type: str
    required: true
  argv:
    description: The program and its arguments, each passed as it is (nothing is split or quoted).
    type: list
    elements: str
    required: true
author: memctl
"""

EXAMPLES = r"""
- name: Count the keys Valkey holds
  memctl.stack.docker_exec:
    container: memctl-valkey
    argv: [valkey-cli, --no-auth-warning, DBSIZE]
  register: dbsize
  changed_when: false
  check_mode: false
"""

RETURN = r"""
rc:
  description: The command's exit code.
  returned: when it ran
  type: int
stdout:
  description: What it printed on standard output, without the final newline.
  returned: when it ran
  type: str
stdout_lines:
  description: I(stdout), split into lines.
  returned: when it ran
  type: list
  elements: str
stderr:
  description: What it printed on standard error, without the final newline.
  returned: when it ran
  type: str
cmd:
  description: I(argv), as run.
  returned: always
  type: list
  elements: str
"""

_TAIL_LINES = 20


def _text(data: bytes | None) -> str:
    """Output bytes as text without the final newline, as ansible.builtin.command returns it."""
    return (data or b"").decode("utf-8", errors="replace").removesuffix("\n")


def exec_result(argv: list[str], exit_code: int, output: tuple[bytes | None, bytes | None]) -> dict[str, Any]:
    """The module's result for a command that ran: `output` is the SDK's demultiplexed
    (stdout, stderr)."""
    stdout, stderr = _text(output[0]), _text(output[1])
    return {
        "changed": True,
        "cmd": list(argv),
        "rc": int(exit_code),
        "stdout": stdout,
        "stdout_lines": stdout.splitlines(),
        "stderr": stderr,
    }


def failure_message(container: str, result: dict[str, Any]) -> str:
    """What to say when the command exited non-zero: the program, where, its last lines."""
    printed = (result["stderr"] or result["stdout"]).strip().splitlines()[-_TAIL_LINES:]
    said = ":\n" + "\n".join(printed) if printed else " (it printed nothing)"
    return f"{result['cmd'][0]} exited {result['rc']} in container {container}{said}"


def not_running_message(container: str, status: str | None) -> str:
    """What to say when the container cannot run a command (None: there is no such container)."""
    if status is None:
        return f"there is no container {container} on this machine: create it first"
    return f"container {container} is {status}, not running: start it first"


def run(module: AnsibleModule) -> dict[str, Any]:
    """Run the command (in check mode: say it was skipped)."""
    from docker.errors import APIError, NotFound

    name, argv = module.params["container"], list(module.params["argv"])
    if not argv:
        module.fail_json(msg="argv: give the program to run and its arguments")
    if module.check_mode:
        return {
            "changed": False,
            "skipped": True,
            "cmd": argv,
            "msg": "not run in check mode (set check_mode: false on a task whose command only reads)",
        }
    try:
        with closing(docker_client(module)) as client:
            try:
                container = client.containers.get(name)
            except NotFound:
                module.fail_json(msg=not_running_message(name, None))
                raise
            state = container.attrs.get("State") or {}
            if not state.get("Running"):
                module.fail_json(msg=not_running_message(name, str(state.get("Status") or "stopped")))
            exit_code, output = container.exec_run(argv, stdout=True, stderr=True, demux=True)
    except APIError as exc:
        module.fail_json(msg=f"docker exec {argv[0]} in container {name} failed: {exc.explanation or exc}")
        raise
    result = exec_result(argv, exit_code, output)
    if result["rc"] != 0:
        module.fail_json(
            msg=failure_message(name, result), **{k: v for k, v in result.items() if k != "changed"}
        )
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "container": {"type": "str", "required": True},
            "argv": {"type": "list", "elements": "str", "required": True},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
