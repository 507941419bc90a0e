"""Real MCP clients against projects provisioned by the README's own command.

Each test provisions a fresh project with `bash scripts/memctl up` under a fresh HOME,
XDG directories and CODEX_HOME, then drives the clients a user has, with a plain PATH
(`/usr/local/bin:/usr/bin:/bin`) and their telemetry off: the Claude Code CLI
(`claude mcp list`), the hook commands memctl wrote, the MCP Inspector CLI (stdio from
`.mcp.json`, HTTP with the project's token) and the Codex CLI (`codex mcp list`, then
servers started exactly as `config.toml` says, in each project's directory).

The tests read the command, arguments and environment from the rendered files and
start nothing any other way, so they hold for any design that works for the clients.
`scripts/clients-setup.sh` installs the clients into `.cache/clients/bin`
(`MEMCTL_CLIENTS_DIR` moves it); a missing client skips its tests, except in CI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import uuid
from collections.abc import Iterator, Mapping
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from ..bridges import MODEL_CACHE, free_port, serving

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = Path(os.environ.get("MEMCTL_CLIENTS_DIR", ROOT / ".cache" / "clients")) / "bin"
PLAIN_PATH = "/usr/local/bin:/usr/bin:/bin"
TELEMETRY_OFF = {
    # Claude Code: no telemetry, error reports, auto-update or other non-essential traffic.
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    # Inspector: no OS keychain probe; it has no telemetry. Codex: `-c analytics.enabled=false`.
    "MCP_INSPECTOR_SECRET_STORE": "memory",
}
CODEX = ("-c", "analytics.enabled=false", "-c", "check_for_update_on_startup=false")
CODEX_INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ")
"""The variables Codex passes from its own environment to a stdio MCP server (rmcp-client's
DEFAULT_ENV_VARS); the server table's `env` and `env_vars` add to them."""
RUN_TIMEOUT = 300  # a hung client fails the test instead of the job; not a timing assertion

pytestmark = [pytest.mark.e2e]


def installed(name: str) -> pytest.MarkDecorator:
    """Skip unless `scripts/clients-setup.sh` installed this client (in CI it must have)."""
    path = CLIENTS / name
    present = os.access(path, os.X_OK)
    if not present and os.environ.get("CI"):
        raise RuntimeError(f"{path} missing: CI must run scripts/clients-setup.sh")
    return pytest.mark.skipif(not present, reason=f"{path} not installed; run scripts/clients-setup.sh")


needs_claude = installed("claude")
needs_inspector = installed("inspector")
needs_codex = installed("codex")


@dataclass
class Sandbox:
    """One user's machine: a home, XDG directories, a Codex home, a plain environment."""

    root: Path
    home: Path
    env: dict[str, str]

    @property
    def codex_config(self) -> Path:
        return Path(self.env["CODEX_HOME"]) / "config.toml"

    def project(self, name: str = "app") -> Path:
        path = self.root / "src" / name
        path.mkdir(parents=True)
        return path

    def run(
        self, argv: list[str], *, cwd: Path, stdin: str = "", env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=cwd,
            env=dict(env if env is not None else self.env),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )

    def up(self, project: Path, *args: str) -> None:
        """The README's quick start, `bash scripts/memctl up`, run in `project`: the one
        command that gets `uv` on PATH (scripts/memctl needs it), and the suite's model cache."""
        uv = os.environ.get("UV") or shutil.which("uv")
        assert uv, "uv is not on PATH: run the tests through scripts/test or `uv run`"
        env = {
            **self.env,
            "PATH": f"{Path(uv).parent}:{PLAIN_PATH}",
            "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR", str(Path.home() / ".cache" / "uv")),
            "MEMCTL_MODEL_CACHE_DIR": str(MODEL_CACHE),
        }
        checkout = sorted(ROOT.glob("playbooks/**/*"))
        result = self.run(["bash", str(ROOT / "scripts" / "memctl"), "up", *args], cwd=project, env=env)
        assert result.returncode == 0, f"memctl up failed:\n{result.stdout}\n{result.stderr}"
        assert sorted(ROOT.glob("playbooks/**/*")) == checkout, "memctl up wrote into the checkout"


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return make_sandbox(tmp_path)


def make_sandbox(root: Path) -> Sandbox:
    home = root / "home"
    env = {
        "HOME": str(home),
        "USER": "tester",
        "LOGNAME": "tester",
        "SHELL": "/bin/sh",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PATH": PLAIN_PATH,
        "TMPDIR": str(root / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "CODEX_HOME": str(home / ".codex"),
        **TELEMETRY_OFF,
    }
    for name in (
        "TMPDIR",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "CODEX_HOME",
    ):
        Path(env[name]).mkdir(parents=True)
    return Sandbox(root, home, env)


def is_memctl(entry: Mapping[str, Any]) -> bool:
    """Whether a client's server entry starts memctl (by its command or its arguments)."""
    words = [str(entry.get("command", "")), *map(str, entry.get("args", []))]
    return any("memctl" in word for word in words)


def memctl_servers(servers: Mapping[str, Any], where: Path) -> dict[str, dict[str, Any]]:
    found = {name: dict(entry) for name, entry in servers.items() if is_memctl(entry)}
    assert found, f"no memctl server in {where}: {servers}"
    return found


def expand(value: str, env: Mapping[str, str]) -> str:
    """`${VAR}` and `${VAR:-default}` as Claude Code expands them in `.mcp.json`."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(3)
        if name in env:
            return env[name]
        assert default is not None, f"{value!r} names ${{{name}}}, which is not set"
        return default

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}", one, value)


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(json.loads(result.content[0].text))


# --- Claude Code -----------------------------------------------------------------------


@needs_claude
def test_claude_code_shows_the_server_connected_after_the_readme_quick_start(sandbox: Sandbox) -> None:
    project = sandbox.project()
    sandbox.up(project)
    servers = memctl_servers(json.loads((project / ".mcp.json").read_text())["mcpServers"], project)
    # The user trusts the folder and approves its servers, as the first `claude` run asks.
    approval = {"hasTrustDialogAccepted": True, "enabledMcpjsonServers": sorted(servers)}
    (sandbox.home / ".claude.json").write_text(json.dumps({"projects": {str(project): approval}}))
    result = sandbox.run([str(CLIENTS / "claude"), "mcp", "list"], cwd=project)
    shown = result.stdout + result.stderr
    assert result.returncode == 0, shown
    for name in servers:
        lines = [line for line in shown.splitlines() if line.startswith(f"{name}: ")]
        assert lines, f"claude mcp list does not show {name}:\n{shown}"
        assert "✔ Connected" in lines[0], f"{name} is not connected:\n{shown}"


def hook_commands(project: Path) -> list[tuple[str, str, str | None, str]]:
    """(file, event, matcher, command) for every command hook in the files memctl wrote."""
    found: list[tuple[str, str, str | None, str]] = []
    for relative in (".claude/settings.json", ".agents/hooks.json"):
        path = project / relative
        if not path.exists():
            continue
        for event, groups in json.loads(path.read_text()).get("hooks", {}).items():
            for group in groups:
                for hook in group.get("hooks", []):
                    if hook.get("type") == "command":
                        found.append((relative, event, group.get("matcher"), hook["command"]))
    return found


def hook_payload(project: Path, event: str, matcher: str | None, transcript: Path) -> str:
    """The JSON Claude Code writes to a hook's stdin, small but complete for the event."""
    body: dict[str, Any] = {
        "session_id": "real-clients-session",
        "transcript_path": str(transcript),
        "cwd": str(project),
        "hook_event_name": event,
    }
    if event == "SessionStart":
        body["source"] = "startup"
    elif event in ("PreCompact", "PostCompact"):
        body |= {"trigger": "manual", "custom_instructions": ""}
    elif event == "SessionEnd":
        body["reason"] = "other"
    elif event in ("PreToolUse", "PostToolUse"):
        body |= {
            "tool_name": matcher or "ExitPlanMode",
            "tool_input": {"plan": "# Plan\n\n1. Retry idempotent calls with jitter."},
            "tool_response": {},
        }
    return json.dumps(body)


def test_every_hook_memctl_wrote_runs_with_a_plain_path(sandbox: Sandbox) -> None:
    project = sandbox.project()
    sandbox.up(project)
    hooks = hook_commands(project)
    assert hooks, f"memctl wrote no hooks in {project}/.claude/settings.json"
    transcript = sandbox.root / "transcript.jsonl"
    message = {"type": "user", "message": {"role": "user", "content": "remember: retry with jitter"}}
    transcript.write_text(json.dumps(message) + "\n")
    failures = []
    for relative, event, matcher, command in hooks:
        stdin = hook_payload(project, event, matcher, transcript)
        # Claude Code gives its hooks CLAUDE_PROJECT_DIR; an agent reading .agents/ may not.
        env = sandbox.env | ({"CLAUDE_PROJECT_DIR": str(project)} if relative.startswith(".claude/") else {})
        result = sandbox.run(["sh", "-c", command], cwd=project, stdin=stdin, env=env)
        # Claude Code shows a hook's stderr and reports any exit but 0 (and 2, a block) as an error.
        if result.returncode != 0 or "not found" in result.stderr:
            output = (result.stdout + result.stderr).strip()
            failures.append(f"{relative} {event}: `{command}` exited {result.returncode}: {output}")
    assert not failures, "\n".join(failures)


# --- MCP Inspector ---------------------------------------------------------------------


def inspector(sandbox: Sandbox, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return sandbox.run([str(CLIENTS / "inspector"), "--cli", *args], cwd=cwd)


def inspector_json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, f"inspector exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return dict(json.loads(result.stdout))


def tool_args(**values: Any) -> list[str]:
    """`--tool-arg key=value ...`, values as JSON where they are not plain strings."""
    pairs = [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in values.items()]
    return ["--tool-arg", *pairs]


def set_and_get(sandbox: Sandbox, cwd: Path, target: list[str], key: str) -> None:
    """tools/list, then memory_set and memory_get of `key`, each one inspector run."""
    listed = inspector_json(inspector(sandbox, cwd, *target, "--method", "tools/list"))
    assert {"memory_set", "memory_get"} <= {tool["name"] for tool in listed["tools"]}, listed
    note = {"title": "Retry policy", "body": f"{key}: retry with jitter", "type": "pattern", "tags": ["http"]}
    call = [*target, "--method", "tools/call", "--tool-name"]
    written = inspector_json(inspector(sandbox, cwd, *call, "memory_set", *tool_args(id=key, **note)))
    assert written["structuredContent"]["operation"] == "created", written
    got = inspector_json(inspector(sandbox, cwd, *call, "memory_get", *tool_args(id=key)))
    assert not got["isError"] and json.loads(got["content"][0]["text"])["body"] == note["body"], got


@needs_inspector
def test_inspector_calls_tools_over_stdio_from_the_rendered_mcp_json(sandbox: Sandbox) -> None:
    project = sandbox.project()
    sandbox.up(project)
    servers = memctl_servers(json.loads((project / ".mcp.json").read_text())["mcpServers"], project)
    # The Inspector reads `.mcp.json`'s format but does not expand `${VAR}`, which Claude
    # Code does: give it the file as Claude Code reads it, started where Claude Code starts it.
    # (Whether Claude Code accepts a variable is the Claude Code test's business.)
    env = sandbox.env | {"CLAUDE_PROJECT_DIR": str(project)}
    expanded = {
        name: {
            **entry,
            "command": expand(entry["command"], env),
            "args": [expand(arg, env) for arg in entry.get("args", [])],
            "env": {k: expand(v, env) for k, v in entry.get("env", {}).items()},
        }
        for name, entry in servers.items()
    }
    config = sandbox.root / "inspector-mcp.json"
    config.write_text(json.dumps({"mcpServers": expanded}))
    for name in servers:
        target = ["--config", str(config), "--server", name, "--cwd", str(project)]
        set_and_get(sandbox, project, target, f"inspector-stdio-{name}")


@contextmanager
def served_over_http(sandbox: Sandbox, project: Path) -> Iterator[str]:
    """`memctl serve --project DIR --http --port N` as the README documents it, with the
    installed `memctl` command (what `pip install .` puts on PATH) and a plain environment."""
    memctl = Path(sys.executable).with_name("memctl")
    port = free_port()
    argv = [str(memctl), "serve", "--project", str(project), "--http", "--port", str(port)]
    env = {**sandbox.env, "MEMCTL_MODEL_CACHE_DIR": str(MODEL_CACHE)}
    base = f"http://127.0.0.1:{port}"
    with serving(argv, env, base, cwd=project, timeout=RUN_TIMEOUT):
        yield f"{base}/mcp"


@needs_inspector
def test_inspector_calls_tools_over_http_with_the_project_token(sandbox: Sandbox) -> None:
    project = sandbox.project()
    sandbox.up(project)
    token = (project / ".memory" / "bridge.token").read_text().strip()
    with served_over_http(sandbox, project) as url:
        # No interactive OAuth: a 401 is reported as such ("Unauthorized", exit 3).
        target = [url, "--transport", "http", "--stored-auth-only"]
        refused = inspector(sandbox, project, *target, "--method", "tools/list")
        assert refused.returncode != 0 and "Unauthorized" in refused.stdout + refused.stderr, refused
        authorized = [*target, "--header", f"Authorization: Bearer {token}"]
        set_and_get(sandbox, project, authorized, "inspector-http")


# --- Codex -----------------------------------------------------------------------------

CODEX_PROJECTS = ("alpha", "beta", "gamma")


@dataclass
class CodexWorld:
    """Three projects provisioned with one `--codex-config $CODEX_HOME/config.toml`."""

    sandbox: Sandbox
    projects: dict[str, Path]

    def servers(self) -> dict[str, dict[str, Any]]:
        """memctl's enabled stdio servers in config.toml: all of them start in every session."""
        tables = tomllib.loads(self.sandbox.codex_config.read_text()).get("mcp_servers", {})
        found = memctl_servers(tables, self.sandbox.codex_config)
        return {name: entry for name, entry in found.items() if entry.get("enabled", True)}

    def start_params(self, entry: Mapping[str, Any], session: Path, path: str) -> StdioServerParameters:
        """The server as Codex starts it in a session whose directory is `session`: the
        table's command and args, the inherited variables plus `env` and `env_vars`, in the
        table's `cwd` or else the session's directory."""
        base = {**self.sandbox.env, "PATH": path}
        env = {name: base[name] for name in CODEX_INHERITED if name in base}
        env |= {name: base[name] for name in entry.get("env_vars", []) if name in base}
        env |= dict(entry.get("env", {}))
        command = str(entry["command"])
        if "/" not in command and shutil.which(command, path=env["PATH"]) is None:
            pytest.fail(f"Codex cannot start {command!r} in {session}: not found on PATH={env['PATH']}")
        # The SDK client merges its own process's variables under these; name every one it adds.
        for name in ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"):
            env.setdefault(name, "")
        return StdioServerParameters(
            command=command,
            args=[str(arg) for arg in entry.get("args", [])],
            env=env,
            cwd=str(entry.get("cwd", session)),
        )


@pytest.fixture(scope="module")
def codex_world(tmp_path_factory: pytest.TempPathFactory) -> CodexWorld:
    sandbox = make_sandbox(tmp_path_factory.mktemp("codex"))
    projects = {name: sandbox.project(name) for name in CODEX_PROJECTS}
    for project in projects.values():
        sandbox.up(project, "--codex-config", str(sandbox.codex_config))
    return CodexWorld(sandbox, projects)


@needs_codex
def test_codex_lists_memctls_server(codex_world: CodexWorld) -> None:
    sandbox = codex_world.sandbox
    servers = codex_world.servers()
    for project in codex_world.projects.values():
        listed = sandbox.run([str(CLIENTS / "codex"), *CODEX, "mcp", "list", "--json"], cwd=project)
        assert listed.returncode == 0, listed.stdout + listed.stderr
        shown = {entry["name"]: entry for entry in json.loads(listed.stdout)}
        assert set(servers) <= set(shown), (servers, listed.stdout)
        assert all(shown[name]["enabled"] for name in servers), listed.stdout
        table = sandbox.run([str(CLIENTS / "codex"), *CODEX, "mcp", "list"], cwd=project)
        assert table.returncode == 0, table.stdout + table.stderr
        for name in servers:
            assert re.search(rf"^{re.escape(name)}\s", table.stdout, re.M), table.stdout


@needs_codex
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "subdirectory"),
    [
        (PLAIN_PATH, ""),
        (PLAIN_PATH, "src/pkg"),
        (f"{Path(sys.executable).parent}:{PLAIN_PATH}", ""),
    ],
    ids=["plain-path", "plain-path-in-subdirectory", "memctl-on-path"],
)
async def test_codex_projects_each_see_only_their_own_memory(
    codex_world: CodexWorld, path: str, subdirectory: str
) -> None:
    """Issue 22's done-when: Codex starts every configured server in its session's
    directory (the directory it runs in, or `-C DIR`; not the git root), so a session in a
    project, or in a subdirectory of it, must reach that project's memory and no other's.
    `memctl-on-path` is a user who installed memctl (`pip install .`) on PATH."""
    servers = codex_world.servers()
    run = uuid.uuid4().hex[:8]
    keys = {name: f"codex-{name}-{run}" for name in codex_world.projects}
    sessions = {name: project / subdirectory for name, project in codex_world.projects.items()}
    for where in sessions.values():
        where.mkdir(parents=True, exist_ok=True)
    for name, session in sessions.items():
        async with AsyncExitStack() as stack:
            for entry in servers.values():
                client = await stack.enter_async_context(
                    Client(codex_world.start_params(entry, session, path), mode="legacy")
                )
                note = {"title": name, "body": f"only {name} knows this", "type": "note", "tags": [name]}
                written = payload(await client.call_tool("memory_set", {"id": keys[name], **note}))
                assert written["ok"], written
    leaks = []
    for name, session in sessions.items():
        async with AsyncExitStack() as stack:
            clients = {
                server: await stack.enter_async_context(
                    Client(codex_world.start_params(entry, session, path), mode="legacy")
                )
                for server, entry in servers.items()
            }
            own = [await c.call_tool("memory_get", {"id": keys[name]}) for c in clients.values()]
            if all(result.is_error for result in own):
                leaks.append(f"{name} cannot find its own entry {keys[name]}")
            for other, key in keys.items():
                if other == name:
                    continue
                for server, client in clients.items():
                    result = await client.call_tool("memory_get", {"id": key})
                    if not result.is_error:
                        leaks.append(f"{name}'s session (server {server!r}) sees {other}'s entry {key}")
    assert not leaks, "\n".join(leaks)


@needs_codex
def test_codex_starts_a_stdio_server_in_its_session_directory(sandbox: Sandbox) -> None:
    """What the Codex harness above relies on, asked of Codex itself: `codex exec -C DIR`
    starts a `[mcp_servers.*]` server in DIR (not DIR's git root), and in the table's `cwd`
    when it has one. The model provider is a closed loopback port, so no turn ever runs;
    each probe server records its directory and Codex is stopped once both have."""
    project = sandbox.project()
    subprocess.run(["git", "init", "-q", str(project)], check=True, env=sandbox.env)
    session = project / "src"
    elsewhere = sandbox.root / "elsewhere"
    session.mkdir()
    elsewhere.mkdir()
    seen = {name: sandbox.root / f"{name}.cwd" for name in ("default", "configured")}
    probe = 'pwd > "$0.part" && mv "$0.part" "$0"; exec cat'
    sandbox.codex_config.write_text(
        'model_provider = "closed"\n'
        'model = "none"\n'
        "[model_providers.closed]\n"
        'name = "closed"\n'
        f'base_url = "http://127.0.0.1:{free_port()}/v1"\n'
        'wire_api = "responses"\n'
        "[mcp_servers.probe-default]\n"
        'command = "/bin/sh"\n'
        f"args = {json.dumps(['-c', probe, str(seen['default'])])}\n"
        "[mcp_servers.probe-configured]\n"
        'command = "/bin/sh"\n'
        f"args = {json.dumps(['-c', probe, str(seen['configured'])])}\n"
        f"cwd = {json.dumps(str(elsewhere))}\n"
    )
    argv = [str(CLIENTS / "codex"), *CODEX, "exec", "--skip-git-repo-check", "-C", str(session), "say hi"]
    log = sandbox.root / "codex.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            argv, cwd=sandbox.root, env=sandbox.env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )
        try:
            deadline = time.monotonic() + RUN_TIMEOUT
            while not all(path.exists() for path in seen.values()):
                assert process.poll() is None, f"codex exited first:\n{log.read_text()}"
                assert time.monotonic() < deadline, f"codex started no probe server:\n{log.read_text()}"
                time.sleep(0.1)
        finally:
            process.terminate()
            process.wait(timeout=RUN_TIMEOUT)
    assert seen["default"].read_text().strip() == str(session)
    assert seen["configured"].read_text().strip() == str(elsewhere)
