"""memctl inventories: Ansible inventories whose machines list their projects, validated up front.

Everything is checked before a playbook runs, so a bad inventory changes nothing: an unknown
mode or client, a slug used twice, a workspace that is not an existing directory (on this
machine), two projects on one port, or a port another program holds. Errors name the field,
e.g. `localhost.memctl_projects[1].mode`.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memory_bridge import ConfigError, check_workspace

from ._ansible_data import as_data, dump
from ._clients import ALL_CLIENTS, Client

__all__ = [
    "DEFAULT_BRIDGE_PORT",
    "Inventory",
    "Machine",
    "Project",
    "load_inventory",
    "one_project_inventory",
]

DEFAULT_BRIDGE_PORT = 3106  # a stack project's bridge port when the inventory gives none
_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class Project(BaseModel):
    """One project of a machine: where it lives, how its memory runs, which clients use it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    slug: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")]
    workspace: str
    mode: Literal["embedded", "stack"] = "embedded"
    clients: tuple[Client, ...] = tuple(sorted(ALL_CLIENTS))
    codex_config: str = ""
    hooks: bool = True
    entry_store: str | None = None
    knowledge_store: str | None = None
    bridge_port: Annotated[int, Field(ge=1024, le=65535)] | None = None
    schedule: Literal["daily", "hourly", "off"] | None = None  # None: leave the project's timer as it is
    bridge_workers: Annotated[int, Field(ge=1, le=64)] = 1

    @field_validator("workspace")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith(("/", "~")):
            raise ValueError(f"must be an absolute path (or start with ~), got {value!r}")
        if value.rstrip("/") in ("", "~"):  # on any host: the whole file system, or a home
            raise ValueError(f"must be a project's own directory, not {value!r} (/ or a home directory)")
        return value


class _MachineVars(BaseModel):
    model_config = ConfigDict(extra="ignore")

    memctl_projects: list[Project] = []


@dataclass(frozen=True)
class Machine:
    """An inventory host and its projects; `local` when Ansible runs it on this machine."""

    name: str
    local: bool
    projects: tuple[Project, ...]


@dataclass(frozen=True)
class Inventory:
    """A validated inventory file and its machines."""

    path: Path
    machines: tuple[Machine, ...]

    @property
    def projects(self) -> list[tuple[Machine, Project]]:
        return [(machine, project) for machine in self.machines for project in machine.projects]

    def checked_projects(self) -> dict[str, list[dict[str, Any]]]:
        """Each machine's projects as memctl validated them: what the playbooks provision
        (`memctl_checked_projects`), instead of the inventory's own text, which Ansible would
        render as templates."""
        return {machine.name: [_record(project) for project in machine.projects] for machine in self.machines}


def _field(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _check_yaml(path: Path) -> None:
    """A YAML inventory that does not parse: one `ConfigError` with file:line:column,
    instead of Ansible's pages of warnings from every inventory plugin it tried. Ansible's
    own tags (`!unsafe`, `!vault`) parse as any tagged node does."""
    if path.suffix not in (".yml", ".yaml") or not path.is_file():
        return
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        YAML().load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"inventory {path}: not UTF-8 text (byte {exc.start})") from exc
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = " ".join(part for part in (exc.context, exc.problem) if part)
        raise ConfigError(
            f"inventory {where}: not valid YAML ({problem}); fix that line and run again"
        ) from exc
    except YAMLError as exc:
        raise ConfigError(f"inventory {path}: not valid YAML ({exc})") from exc


def _machine_vars(path: Path) -> dict[str, dict[str, Any]]:
    """Each host's variables as the inventory defines them (templates left unrendered)."""
    os.environ.setdefault("ANSIBLE_INVENTORY_UNPARSED_FAILED", "true")
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    _check_yaml(path)
    try:
        manager = InventoryManager(loader=DataLoader(), sources=[str(path)])
    except AnsibleError as exc:
        raise ConfigError(f"inventory {path}: {str(exc).splitlines()[0]}") from exc
    return {host.name: host.get_vars() | _group_vars(host) for host in manager.get_hosts()}


def _group_vars(host: Any) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for group in sorted(host.get_groups(), key=lambda g: g.depth):
        merged.update(group.get_vars())
    return {k: v for k, v in merged.items() if k not in host.get_vars()}


def _is_local(name: str, hostvars: dict[str, Any]) -> bool:
    return hostvars.get("ansible_connection") == "local" or (
        name in _LOCAL_NAMES and str(hostvars.get("ansible_host", name)) in _LOCAL_NAMES
    )


def load_inventory(path: Path) -> Inventory:
    """Read and validate a memctl inventory; `ConfigError` naming the field on any problem."""
    path = path.expanduser()
    if not path.exists():
        raise ConfigError(f"inventory {path}: no such file or directory")
    machines = []
    for name, hostvars in _machine_vars(path).items():
        try:
            parsed = _MachineVars.model_validate(hostvars)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = _field((name, *problem["loc"]))
            got = f" (got {problem['input']!r})" if isinstance(problem["input"], str | int | float) else ""
            raise ConfigError(f"inventory {path}: {where}: {problem['msg']}{got}") from exc
        machines.append(Machine(name, _is_local(name, hostvars), tuple(parsed.memctl_projects)))
    inventory = Inventory(path, tuple(machines))
    if not inventory.projects:
        raise ConfigError(f"inventory {path}: no machine lists any memctl_projects")
    _check_unique(inventory)
    for machine in inventory.machines:
        if machine.local:
            _check_local(inventory, machine)
    return inventory


def _check_unique(inventory: Inventory) -> None:
    seen: dict[str, str] = {}
    ports: dict[tuple[str, int], str] = {}
    for machine, project in inventory.projects:
        if project.slug in seen:
            raise ConfigError(
                f"inventory {inventory.path}: slug {project.slug!r} is used twice "
                f"(on {seen[project.slug]} and {machine.name}); each project needs its own"
            )
        seen[project.slug] = machine.name
        port = project.bridge_port or (DEFAULT_BRIDGE_PORT if project.mode == "stack" else None)
        if port is not None:
            key = (machine.name, port)
            if key in ports:
                raise ConfigError(
                    f"inventory {inventory.path}: {machine.name}: bridge_port {port} is used by both "
                    f"{ports[key]!r} and {project.slug!r}; give each stack project its own bridge_port"
                )
            ports[key] = project.slug


def _check_local(inventory: Inventory, machine: Machine) -> None:
    for index, project in enumerate(machine.projects):
        where = f"inventory {inventory.path}: {machine.name}.memctl_projects[{index}]"
        workspace = Path(project.workspace).expanduser()
        if not workspace.is_dir():
            raise ConfigError(f"{where}.workspace: {workspace} is not an existing directory")
        try:
            check_workspace(workspace)
        except ConfigError as exc:
            raise ConfigError(f"{where}.workspace: {exc}") from exc
        port = project.bridge_port
        if project.mode == "stack" and port is not None and _port_taken_by_stranger(port):
            raise ConfigError(f"{where}.bridge_port: port {port} is in use by another program")


def _port_taken_by_stranger(port: int) -> bool:
    """True when something listens on the loopback port and it is not a memctl bridge."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        if probe.connect_ex(("127.0.0.1", port)) != 0:
            return False
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0)
        return "ok" not in answer.json()
    except (httpx.HTTPError, ValueError):
        return True


def _record(project: Project) -> dict[str, Any]:
    return project.model_dump(exclude_none=True, mode="json")


def local_inventory(projects: list[dict[str, Any]]) -> dict[str, Any]:
    """An inventory of this machine (Ansible runs locally, with its own Python) holding
    `projects` (as data, never templates), as a document to dump as YAML."""
    localhost = {
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "memctl_projects": as_data(projects),
    }
    return {"all": {"hosts": {"localhost": localhost}}}


def write_local_inventory(path: Path, projects: list[dict[str, Any]]) -> Path:
    """Write `local_inventory(projects)` to `path`; the path."""
    path.write_text(dump(local_inventory(projects)), encoding="utf-8")
    return path


def one_project_inventory(project: Project, directory: Path) -> Path:
    """Write an inventory of this machine with one project; its path."""
    return write_local_inventory(directory / "inventory.yml", [_record(project)])
