"""Docker Compose v2 as memctl's docker_compose module reaches it: the `docker compose` CLI
plugin for what only Compose knows (a project's model, up, stop, down; Compose has no SDK),
the engine's SDK for what a project holds. Failures fail the task with Compose's own words."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Compose", "Project", "Snapshot", "events", "snapshot"]

PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
ONEOFF_LABEL = "com.docker.compose.oneoff"
# Compose's progress lines on stderr (with --dry-run too): " [DRY-RUN MODE - ] Container x-1  Started".
EVENT = re.compile(r"^\s*(?:DRY-RUN MODE -\s+)?(Container|Network|Volume|Image)\s+(\S+)\s+(\S.*?)\s*$")
# Events that report a resource as it already is, not a change to it.
UNCHANGED = frozenset({"Running", "Waiting", "Healthy"})


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


class Compose:
    """`docker compose` in one project directory (or none, for the version), run through the
    module so that a failure becomes a task failure naming the problem."""

    def __init__(self, module: Any, project_src: str | None) -> None:
        self.module = module
        self.project_src = project_src
        docker = module.get_bin_path("docker")
        if docker is None:
            module.fail_json(msg="docker not found on PATH: run the memctl.docker role first")
        self.docker: str = docker

    def _call(self, args: tuple[str, ...]) -> tuple[int, str, str]:
        argv = [self.docker, "compose", *args]
        if self.project_src is None:
            rc, out, err = self.module.run_command(argv)
        else:
            rc, out, err = self.module.run_command(argv, cwd=self.project_src)
        return int(rc), str(out), str(err)

    def version(self) -> str:
        """Compose's version (`docker compose version --short`); fails saying how to install it."""
        rc, out, err = self._call(("version", "--short"))
        if rc != 0:
            self.module.fail_json(
                msg=f"Compose v2 is missing (`docker compose version`: {_tail(err or out, 3)}): "
                "run the memctl.docker role, which installs it as the Docker CLI plugin",
                rc=rc,
                stderr=err,
            )
        return out.strip()

    def run(self, *args: str, problem: str) -> tuple[str, str]:
        """Run one compose command; on failure, fail the task with `problem` and Compose's stderr."""
        rc, out, err = self._call(args)
        if rc != 0:
            self.module.fail_json(
                msg=f"{problem} ({self.project_src}): {_tail(err or out)}", rc=rc, stderr=err, stdout=out
            )
        return out, err


@dataclass(frozen=True)
class Project:
    """A Compose project as Compose reads it: its name, services and their images."""

    name: str
    services: list[str]
    images: list[str]

    @classmethod
    def read(cls, compose: Compose) -> Project:
        """Validate and read the project (`config`), failing with Compose's words when it is invalid."""
        problem = "invalid Compose project"
        out, _ = compose.run("config", "--format", "json", problem=problem)
        model = json.loads(out)
        listed, _ = compose.run("config", "--images", problem=problem)
        images = list(dict.fromkeys(line.strip() for line in listed.splitlines() if line.strip()))
        return cls(str(model["name"]), sorted(model.get("services") or {}), images)


@dataclass(frozen=True)
class Snapshot:
    """What a project holds in the engine: its containers (one-off runs aside), networks, volumes."""

    containers: list[dict[str, str]] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)

    def running_services(self) -> list[str]:
        return sorted({c["service"] for c in self.containers if c["state"] == "running"})

    def key(self) -> tuple[object, ...]:
        """What a change to the project changes: which containers exist in which state, and
        which networks and volumes."""
        return (
            sorted((c["id"], c["state"]) for c in self.containers),
            sorted(self.networks),
            sorted(self.volumes),
        )


def snapshot(client: Any, project: str) -> Snapshot:
    """The project's resources, found by the label Compose puts on each, through the SDK."""
    label = {"label": f"{PROJECT_LABEL}={project}"}
    containers = [
        {
            "name": str(c.name),
            "service": str(c.labels.get(SERVICE_LABEL, "")),
            "state": str(c.status),
            "id": str(c.id),
        }
        for c in client.containers.list(all=True, filters=label)
        if c.labels.get(ONEOFF_LABEL) != "True"
    ]
    networks = [str(n.name) for n in client.networks.list(filters=label)]
    volumes = [str(v.name) for v in client.volumes.list(filters=label)]
    return Snapshot(sorted(containers, key=lambda c: c["name"]), sorted(networks), sorted(volumes))


def events(stderr: str) -> list[str]:
    """Compose's progress events that change something ("Container x-1 Recreate"), in order."""
    found = (EVENT.match(line) for line in stderr.splitlines())
    return [f"{m[1]} {m[2]} {m[3]}" for m in found if m and m[3] not in UNCHANGED]
