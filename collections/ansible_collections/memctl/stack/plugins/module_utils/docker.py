"""The Docker engine as memctl's modules reach it: the SDK where it serves, the CLI where a
module needs what only the CLI does (see docs/provisioning.md); failures fail the task."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["DockerCLI", "docker_client", "fingerprint"]

HASH_LABEL = "io.memctl.spec-hash"


def fingerprint(value: Any) -> str:
    """A stable SHA-256 of a JSON-serialisable value (keys sorted)."""
    encoded = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()


class DockerCLI:
    """Runs `docker` through the module, so its failures become task failures."""

    def __init__(self, module: Any, binary: str = "docker") -> None:
        self.module = module
        found = module.get_bin_path(binary)
        if found is None:
            module.fail_json(msg=f"{binary} not found on PATH: run the memctl.docker role first")
        self.binary: str = found

    def run(self, *args: str, check: bool = True) -> tuple[int, str, str]:
        """Run one docker command; on failure (when check), fail the task with its stderr."""
        rc, out, err = self.module.run_command([self.binary, *args])
        if check and rc != 0:
            self.module.fail_json(msg=f"docker {args[0]} failed: {err.strip() or out.strip()}", rc=rc)
        return int(rc), str(out), str(err)

    def inspect(self, kind: str, name: str) -> dict[str, Any] | None:
        """`docker <kind> inspect NAME` as a dict, or None when there is no such object."""
        rc, out, err = self.run(kind, "inspect", name, check=False)
        if rc != 0:
            if "no such" in err.lower() or "not found" in err.lower():
                return None
            self.module.fail_json(msg=f"docker {kind} inspect {name} failed: {err.strip()}", rc=rc)
        items = json.loads(out)
        return dict(items[0]) if items else None


def docker_client(module: Any) -> Any:
    """A Docker SDK client of this machine's engine (found as the CLI finds it: DOCKER_HOST,
    else the current context); fails the task saying how to fix it when there is none."""
    try:
        import docker
    except ImportError as exc:
        module.fail_json(
            msg=f"the Docker SDK for Python is missing ({exc}): install memctl on this host, "
            "or set ansible_python_interpreter to the Python that has it"
        )
        raise
    try:
        return docker.from_env()
    except docker.errors.DockerException as exc:
        module.fail_json(msg=f"no Docker engine answers ({exc}): run the memctl.docker role first")
        raise
