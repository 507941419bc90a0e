"""Proof that each client can start a project's memory server: exactly as its file says.

For every client file memctl rendered, the server entry is read back from the file,
expanded the way that client expands it (`${HOME}` for Claude Code, `${userHome}` and
`${workspaceFolder}` for Cursor and VS Code, nothing for Codex), and started in the
project with an ordinary login PATH (not memctl's own environment), and a real MCP client
lists its tools. Entries that come out the same are started once.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from ._jsontext import loads

__all__ = ["ORDINARY_PATH", "Launch", "Proof", "launches", "prove"]

ORDINARY_PATH = "/usr/local/bin:/usr/bin:/bin"
"""The PATH of a login shell on a Debian-like system: what a client started from a desktop
or a fresh terminal has, with no virtual environment on it."""

_START_SECONDS = 60.0
_SHELL_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_EDITOR_VARIABLE = re.compile(r"\$\{(userHome|workspaceFolder|env:[A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Launch:
    """One way a client starts the server, after the client's own variable expansion."""

    files: tuple[str, ...]
    command: str
    args: tuple[str, ...]
    cwd: str
    env: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Proof:
    """Whether a launch served MCP: the files that use it, and the tools or the error."""

    files: tuple[str, ...]
    command: str
    ok: bool
    tools: int = 0
    error: str = ""


def _claude_expand(text: str, env: dict[str, str]) -> str:
    """Claude Code's expansion: ${VAR} and ${VAR:-default}; an unset ${VAR} stays as written."""

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        return default if default is not None else match.group(0)

    return _SHELL_VARIABLE.sub(value, text)


def _editor_expand(text: str, env: dict[str, str], workspace: Path) -> str:
    """VS Code's and Cursor's expansion: ${userHome}, ${workspaceFolder}, ${env:NAME}."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "userHome":
            return env.get("HOME", "")
        if name == "workspaceFolder":
            return str(workspace)
        return env.get(name.removeprefix("env:"), "")

    return _EDITOR_VARIABLE.sub(value, text)


def _login_env() -> dict[str, str]:
    """An ordinary login environment: the user's HOME and locale, the system PATH."""
    env = {"PATH": ORDINARY_PATH, "HOME": str(Path.home())}
    for name in ("USER", "LOGNAME", "LANG", "TMPDIR"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _json_entry(path: Path, key: str, name: str) -> dict[str, Any] | None:
    try:
        document = loads(path.read_text(encoding="utf-8"))  # VS Code's and Cursor's are JSONC
    except (OSError, ValueError):
        return None
    entry = document.get(key, {}).get(name) if isinstance(document, dict) else None
    return entry if isinstance(entry, dict) else None


def _toml_entry(path: Path, name: str) -> dict[str, Any] | None:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = document.get("mcp_servers", {}).get(name)
    return entry if isinstance(entry, dict) else None


def _launch(
    label: str, entry: dict[str, Any], workspace: Path, expand: Callable[[str], str], base: dict[str, str]
) -> Launch | None:
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list):
        return None
    extra = entry.get("env")
    env = {**base, **{str(k): expand(str(v)) for k, v in (extra if isinstance(extra, dict) else {}).items()}}
    cwd = entry.get("cwd")
    return Launch(
        files=(label,),
        command=expand(command),
        args=tuple(expand(str(a)) for a in args),
        cwd=expand(cwd) if isinstance(cwd, str) else str(workspace),
        env=tuple(sorted(env.items())),
    )


def launches(workspace: Path, server_name: str, codex_configs: Sequence[Path] = ()) -> list[Launch]:
    """Every distinct way the project's rendered client files start memctl's server."""
    base = _login_env()

    def shell(text: str) -> str:
        return _claude_expand(text, base)

    def editor(text: str) -> str:
        return _editor_expand(text, base, workspace)

    def verbatim(text: str) -> str:
        return text

    files: list[tuple[str, str, Callable[[str], str]]] = [
        (".mcp.json", "mcpServers", shell),
        (".cursor/mcp.json", "mcpServers", editor),
        (".vscode/mcp.json", "servers", editor),
        (".agents/mcp.json", "mcpServers", verbatim),
    ]
    sources: list[tuple[str, dict[str, Any] | None, Callable[[str], str]]] = [
        (name, _json_entry(workspace / name, key, server_name), expand) for name, key, expand in files
    ]
    sources += [(str(path), _toml_entry(path, server_name), verbatim) for path in codex_configs]
    by_start: dict[tuple[Any, ...], Launch] = {}
    for label, entry, expand in sources:
        launch = _launch(label, entry, workspace, expand, base) if entry is not None else None
        if launch is None:
            continue
        key = (launch.command, launch.args, launch.cwd, launch.env)
        seen = by_start.get(key)
        by_start[key] = launch if seen is None else replace(seen, files=(*seen.files, label))
    return list(by_start.values())


def _stderr_tail(handle: Any) -> str:
    handle.seek(0)
    lines = [line.strip() for line in handle.read().splitlines() if line.strip()]
    return " / ".join(lines[-3:])


async def _prove_one(launch: Launch) -> Proof:
    params = StdioServerParameters(
        command=launch.command, args=list(launch.args), env=dict(launch.env), cwd=launch.cwd
    )
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errors:
        try:
            with anyio.fail_after(_START_SECONDS):
                async with Client(stdio_client(params, errlog=errors), mode="legacy") as client:
                    tools = await client.list_tools()
            return Proof(launch.files, launch.command, True, tools=len(tools.tools))
        except TimeoutError:
            problem = f"no answer within {_START_SECONDS:.0f} s"
        except Exception as exc:  # any failure to start or answer is the finding
            problem = str(exc) or type(exc).__name__
        detail = _stderr_tail(errors)
    return Proof(launch.files, launch.command, False, error=f"{problem}" + (f": {detail}" if detail else ""))


async def prove(
    workspace: Path, server_name: str = "memory", codex_configs: Sequence[Path] = ()
) -> list[Proof]:
    """Start every distinct server entry of the project's client files (and of the Codex
    configs given); one proof each."""
    found = launches(workspace, server_name, codex_configs)
    results: list[Proof | None] = [None] * len(found)

    async def run(index: int, launch: Launch) -> None:
        results[index] = await _prove_one(launch)

    async with anyio.create_task_group() as group:
        for index, launch in enumerate(found):
            group.start_soon(run, index, launch)
    return [r for r in results if r is not None]
