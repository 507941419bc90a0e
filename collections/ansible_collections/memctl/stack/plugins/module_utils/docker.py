"""The Docker CLI as memctl's modules use it: inspect as JSON, run, fail clearly."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["DockerCLI", "fingerprint"]

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
