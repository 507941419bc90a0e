"""`memctl init`: prepare a project's settings file and register it, without provisioning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from pydantic import SecretStr

from memory_bridge import Settings, load_settings, private_dir, write_atomically
from memory_bridge.stores import entry_store_scheme

from ..provision._registry import add_project, registry_path
from ._output import console, emit_json, json_option
from ._project_options import build_project, project_options

_SKIPPED = {"project"}


def _toml_value(value: Any) -> str:
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value))


def config_template(chosen: dict[str, Any]) -> str:
    """A `.memory/config.toml`: the chosen settings, then every other one commented out."""
    lines = [
        "# memctl settings for this project (flags and MEMCTL_* variables override them).",
        "# Every setting: docs/configuration.md. Keep secrets out of this file: use *_file settings.",
        "",
    ]
    lines += [f"{name} = {_toml_value(value)}" for name, value in chosen.items()]
    if chosen:
        lines.append("")
    for name, (_, field) in Settings.flat_fields().items():
        if name in _SKIPPED or name in chosen or field.annotation in (SecretStr, SecretStr | None):
            continue
        default = field.default_factory() if field.default_factory else field.default  # type: ignore[call-arg]
        if default is None:
            continue
        lines.append(f"# {field.description}")
        lines.append(f"# {name} = {_toml_value(default)}")
    return "\n".join(lines) + "\n"


@click.command()
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project directory (default: current). Created if missing.",
)
@project_options
@click.option("--entry-store", help="Entry store URL to write into the settings (default: sqlite).")
@click.option("--knowledge-store", help="Knowledge store URL to write into the settings (default: sqlite).")
@json_option
def init(
    project: Path | None,
    slug: str | None,
    mode: str,
    clients: tuple[str, ...],
    entry_store: str | None,
    knowledge_store: str | None,
    as_json: bool,
) -> None:
    """Write the project's .memory/config.toml and register the project; provision nothing.

    The settings file holds the store URLs given here and every other setting commented out
    with its default; an existing file is kept as it is. The project is added to this
    machine's projects (`memctl projects list`); `memctl up` (or `up --all`) provisions it.

    \b
    Example:
      memctl init --entry-store valkey://127.0.0.1:6379/0 --client claude
      memctl up
    """
    workspace = (project or Path.cwd()).expanduser().absolute()
    chosen = {k: v for k, v in (("entry_store", entry_store), ("knowledge_store", knowledge_store)) if v}
    record = build_project(workspace, slug, clients, mode=mode)
    config = workspace / ".memory" / "config.toml"
    if not config.exists():  # a bad URL or value stops here, before anything is written
        entry_store_scheme(load_settings(project=workspace, **chosen).stores.entry_store)
    workspace.mkdir(parents=True, exist_ok=True)
    private_dir(config.parent)
    written = not config.exists()
    if written:  # it may come to hold a token or an API key
        write_atomically(config, config_template(chosen), mode=0o600)
    add_project(record)
    result: dict[str, Any] = {
        "ok": True,
        "project": record.model_dump(mode="json"),
        "config": {"path": str(config), "action": "created" if written else "kept"},
        "inventory": str(registry_path()),
    }
    if as_json:
        emit_json(result)
        return
    console.print(f"{result['config']['action']} {config}")
    console.print(f"registered {record.slug} in {registry_path()}")
    console.print("next: memctl up" + ("" if project is None else f" --project {workspace}"))
