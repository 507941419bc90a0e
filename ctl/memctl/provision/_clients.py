"""Client configuration for a project's memory: rendered per client, applied to a workspace.

`apply(workspace, plan)` brings every file a client needs up to date and reports one
`Change` per file; with `check=True` it reports the same changes, with diffs, and writes
nothing. Two kinds of file:

- **merged** files hold the user's entries too; only memctl's own entries are replaced
  (`_merge`): `.mcp.json`, `.claude/settings.json`, `.cursor/mcp.json`, `.vscode/mcp.json`,
  `.agents/mcp.json`, `.agents/hooks.json`, Codex's `config.toml` and a `.gitignore` block
  (JSON files may be JSONC, with comments and trailing commas, as VS Code and Cursor write them);
- **owned** files are memctl's outright: `.agents/README.md`, `.agents/rules/<skill>.md`,
  `.claude/skills/<skill>/SKILL.md`. `.memory/owned.json` records the sha256 of what memctl
  last wrote to each; one the user has edited since is reported and left alone.

Every change is computed before anything is written, so a file memctl cannot merge (such
as malformed JSON) stops the run with a `ConfigError` naming it, and nothing is written.
A file whose content would not change is not written at all, so re-runs are byte-stable.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, get_args

from memory_bridge import ConfigError, LinkRefused, write_atomically

from ._created import Created, new_containers, new_dirs, without_empty
from ._jsontext import edit_to, loads
from ._launcher import LAUNCHER_HOME_PATH, default_launcher, write_launcher
from ._merge import (
    HOOK_SIGNATURE,
    ensure_listed,
    merge_hooks,
    merge_marked_block,
    merge_servers,
    merge_toml_table,
    remove_hooks,
    remove_listed,
    remove_marked_block,
    remove_server,
    remove_toml_table,
)
from ._templates import render
from ._user_files import add_user, created_by_memctl, other_users, remove_user

__all__ = [
    "ALL_CLIENTS",
    "HOOK_EVENTS",
    "MANIFEST",
    "SKILLS",
    "Action",
    "Change",
    "Client",
    "Plan",
    "Skill",
    "apply",
    "hook_entries",
    "install_launcher",
    "remove",
    "server_entry",
    "unified_diff",
]

Client = Literal["claude", "cursor", "vscode", "agents"]
Action = Literal["created", "updated", "unchanged", "edited-left-alone", "link-left-alone", "removed"]
JSONObject = dict[str, Any]
ServerEntry = dict[str, str | list[str]]

ALL_CLIENTS: frozenset[Client] = frozenset(get_args(Client))
MANIFEST = Path(".memory/owned.json")
GITIGNORE_MARKERS = ("# >>> memctl >>>", "# <<< memctl <<<")
GITIGNORE_LINES = ("/.memory/", "/.agents/mcp.json")
"""`.agents/mcp.json` names the launcher by its absolute path (its readers need not expand
variables), so it is one machine's file and stays out of git."""

HOOK_EVENTS: dict[str, tuple[str | None, str]] = {
    "SessionStart": (None, "session-start"),
    "PreCompact": (None, "pre-compact"),
    "PostCompact": (None, "post-compact"),
    "SessionEnd": (None, "session-end"),
    "PostToolUse": ("ExitPlanMode", "exit-plan-mode"),
}
"""Each hook event memctl handles: its matcher (if any) and the `memctl hook` argument."""


@dataclass(frozen=True)
class Skill:
    """Guidance for agents, written as a Claude Code skill and as an `.agents/rules/` file;
    its text is the template `templates/skills/<name>.md.j2`."""

    name: str
    title: str
    description: str


@dataclass(frozen=True)
class Plan:
    """What to configure: the project served, the server's name, and the clients.

    `codex_config` is the path of Codex's `config.toml` (usually `~/.codex/config.toml`);
    Codex is configured only when it is given. `launcher` is the script clients start
    (`_launcher`): `~/.local/bin/memctl` unless given.
    """

    project: Path
    server_name: str = "memory"
    clients: frozenset[Client] = ALL_CLIENTS
    codex_config: Path | None = None
    hooks: bool = False  # lifecycle hooks (`memctl hook <event>`) for the capture pipeline
    launcher: Path = field(default_factory=default_launcher)

    def __post_init__(self) -> None:
        paths = (("project", self.project), ("codex_config", self.codex_config), ("launcher", self.launcher))
        for label, path in paths:
            if path is not None and not path.is_absolute():
                raise ConfigError(f"{label} must be an absolute path, got {path}")
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.server_name):
            raise ConfigError(f"server name {self.server_name!r}: use 1-64 letters, digits, '-' or '_'")
        if unknown := set(self.clients) - ALL_CLIENTS:
            raise ConfigError(f"unknown clients {sorted(unknown)}; known: {sorted(ALL_CLIENTS)}")


@dataclass(frozen=True)
class Change:
    """What `apply` did (or, in check mode, would do) to one file; `diff` unless unchanged."""

    path: Path
    action: Action
    diff: str | None = None


# What memctl puts in each client's configuration.


def _launcher(plan: Plan, home: str | None) -> str:
    """The launcher as a config names it: through `home` (the client's spelling of the
    home directory) when it is the default one, so the file holds no user's own path."""
    if home is not None and plan.launcher == Path.home() / LAUNCHER_HOME_PATH:
        return f"{home}/{LAUNCHER_HOME_PATH}"
    return str(plan.launcher)


def server_entry(plan: Plan, client: Client | Literal["codex"] = "claude") -> ServerEntry:
    """The stdio MCP server entry with which `client` serves the project's memory.

    Claude Code (`${HOME}`), Codex and `.agents/` start the server in the project and it
    finds the project by walking up from there; Cursor and VS Code name the project
    through their `${workspaceFolder}`. Nothing in it names one machine's paths except
    the Codex and `.agents/` entries, which live outside the repository or outside git.
    """
    if client in ("cursor", "vscode"):
        command = _launcher(plan, "${userHome}")
        entry: ServerEntry = {"command": command, "args": ["serve", "--project", "${workspaceFolder}"]}
        return {"type": "stdio", **entry} if client == "vscode" else entry
    home = "${HOME}" if client == "claude" else None
    return {"command": _launcher(plan, home), "args": ["serve"]}


def _hook_command(plan: Plan) -> str:
    """The launcher as a shell names it: through `$HOME` when it is the default one."""
    if plan.launcher == Path.home() / LAUNCHER_HOME_PATH:
        return f'"$HOME"/{LAUNCHER_HOME_PATH}'
    return shlex.quote(str(plan.launcher))


def hook_entries(plan: Plan) -> dict[str, list[JSONObject]]:
    """memctl's hook entries by event, each command ending in the ownership signature.

    A hook finds its project from the client (`CLAUDE_PROJECT_DIR`, the session's `cwd`)
    or by walking up from where it runs, so it names no path of this machine."""
    entries: dict[str, list[JSONObject]] = {}
    for event, (matcher, argument) in HOOK_EVENTS.items():
        hook = {"type": "command", "command": f"{_hook_command(plan)} hook {argument} {HOOK_SIGNATURE}"}
        entries[event] = [{"matcher": matcher, "hooks": [hook]} if matcher else {"hooks": [hook]}]
    return entries


SKILLS = (
    Skill(
        name="memory-recall",
        title="Recall project memory before you work",
        description=(
            "Check this project's memory before non-trivial work or when an error appears: "
            "recall_lessons for lessons from past corrections, search_memory for decisions, "
            "conventions, root causes and earlier plans."
        ),
    ),
    Skill(
        name="memory-save",
        title="Save what the next session needs",
        description=(
            "Save to project memory: save_lesson right after the user corrects you or you find your "
            "own mistake; save_to_dataset for decisions, root causes, rules the user gives, project "
            "lore and investigations, routed to the right slot."
        ),
    ),
    Skill(
        name="plan-capture",
        title="Keep plans and their outcomes in memory",
        description=(
            "Before planning, look for earlier plans and investigations in memory; keep a plan made "
            "outside plan mode in the plans dataset, and record its outcome when the work ends."
        ),
    ),
)


def _skill_md(skill: Skill) -> str:
    """A Claude Code `SKILL.md`: YAML front matter (JSON strings are valid YAML), then the rule."""
    return render("skills/SKILL.md.j2", skill=skill)


def _rule_md(skill: Skill) -> str:
    return render("skills/rule.md.j2", skill=skill)


def _agents_readme(plan: Plan) -> str:
    entry = server_entry(plan, "agents")
    return render("agents/README.md.j2", server_name=plan.server_name, entry=entry, skills=SKILLS)


# The files, per client.


@dataclass(frozen=True)
class _Merged:
    """A file holding the user's entries too: `merge` maps its text ("" if absent) to ours."""

    path: Path
    merge: Callable[[str], str]


@dataclass(frozen=True)
class _Owned:
    """A file memctl owns outright, with the text it should hold."""

    path: Path
    text: str


def _dump_json(document: JSONObject) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _reject_constant(name: str) -> Any:
    raise ConfigError(f"{name} is not a JSON value")


def _unique_keys(pairs: list[tuple[str, Any]]) -> JSONObject:
    """An object from its pairs; a repeated key is refused, since keeping one would lose the other."""
    document: JSONObject = {}
    for key, value in pairs:
        if key in document:
            raise ConfigError(f'the key "{key}" appears twice in one object')
        document[key] = value
    return document


def _load_json(text: str) -> JSONObject:
    """A JSON object from JSONC text (comments and trailing commas allowed, as VS Code and
    Cursor write them); blank text is `{}`; anything else malformed is a `ConfigError`."""
    if not text.strip():
        return {}
    try:
        document = loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc
    if not isinstance(document, dict):
        raise ConfigError("the top level is not a JSON object")
    return document


def _json(merge: Callable[[JSONObject], JSONObject]) -> Callable[[str], str]:
    """A merge of JSON text: the document merged structurally, then the text edited in place
    to match (`_jsontext`), so the user's formatting, order and bytes stay as they were."""

    def edit(text: str) -> str:
        desired = merge(_load_json(text))
        if not text.strip():
            return _dump_json(desired) if desired else text
        return edit_to(text, desired)

    return edit


def _mcp_json(path: str, key: str, plan: Plan, entry: ServerEntry) -> _Merged:
    """A client's MCP servers file with memctl's server in it."""
    return _Merged(
        Path(path), _json(lambda doc: merge_servers(doc, key=key, name=plan.server_name, entry=entry))
    )


def _claude(plan: Plan) -> list[_Merged | _Owned]:
    def settings(document: JSONObject) -> JSONObject:
        hooked = merge_hooks(document, hook_entries(plan)) if plan.hooks else document
        return ensure_listed(hooked, key="enabledMcpjsonServers", value=plan.server_name)

    return [
        _mcp_json(".mcp.json", "mcpServers", plan, server_entry(plan, "claude")),
        _Merged(Path(".claude/settings.json"), _json(settings)),
        *(_Owned(Path(".claude/skills", skill.name, "SKILL.md"), _skill_md(skill)) for skill in SKILLS),
    ]


def _agents(plan: Plan) -> list[_Merged | _Owned]:
    ours = hook_entries(plan)
    hooks = [_Merged(Path(".agents/hooks.json"), _json(lambda doc: merge_hooks(doc, ours)))]
    return [
        _mcp_json(".agents/mcp.json", "mcpServers", plan, server_entry(plan, "agents")),
        *(hooks if plan.hooks else []),
        _Owned(Path(".agents/README.md"), _agents_readme(plan)),
        *(_Owned(Path(".agents/rules", f"{skill.name}.md"), _rule_md(skill)) for skill in SKILLS),
    ]


def _targets(plan: Plan) -> list[_Merged | _Owned]:
    """Every file to bring up to date, in report order; paths relative to the workspace."""
    targets: list[_Merged | _Owned] = []
    if "claude" in plan.clients:
        targets += _claude(plan)
    if "cursor" in plan.clients:
        targets.append(_mcp_json(".cursor/mcp.json", "mcpServers", plan, server_entry(plan, "cursor")))
    if "vscode" in plan.clients:
        targets.append(_mcp_json(".vscode/mcp.json", "servers", plan, server_entry(plan, "vscode")))
    if "agents" in plan.clients:
        targets += _agents(plan)
    if plan.codex_config is not None:
        table = ("mcp_servers", plan.server_name)
        entry = server_entry(plan, "codex")
        targets.append(_Merged(plan.codex_config, lambda text: merge_toml_table(text, table, entry)))
    start, end = GITIGNORE_MARKERS
    block = partial(merge_marked_block, start=start, end=end, body=GITIGNORE_LINES)
    return [*targets, _Merged(Path(".gitignore"), block)]


def _removals(plan: Plan) -> list[_Merged | _Owned]:
    """What `remove` takes back: memctl's entries in merged files, and its owned files."""
    name = plan.server_name
    json_servers = {
        ".mcp.json": "mcpServers",
        ".cursor/mcp.json": "mcpServers",
        ".vscode/mcp.json": "servers",
    }
    targets: list[_Merged | _Owned] = [
        _Merged(Path(path), _json(partial(remove_server, key=key, name=name)))
        for path, key in json_servers.items()
    ]

    def settings(document: JSONObject) -> JSONObject:
        return remove_listed(remove_hooks(document), key="enabledMcpjsonServers", value=name)

    targets += [
        _Merged(Path(".claude/settings.json"), _json(settings)),
        _Merged(Path(".agents/mcp.json"), _json(partial(remove_server, key="mcpServers", name=name))),
        _Merged(Path(".agents/hooks.json"), _json(remove_hooks)),
    ]
    owned = [
        target
        for target in _targets(dataclasses.replace(plan, clients=ALL_CLIENTS))
        if isinstance(target, _Owned)
    ]
    if plan.codex_config is not None and not other_users(plan.codex_config, plan.project):
        table = ("mcp_servers", name)
        targets.append(_Merged(plan.codex_config, lambda text: remove_toml_table(text, table)))
    start, end = GITIGNORE_MARKERS
    return [*targets, *owned, _Merged(Path(".gitignore"), partial(remove_marked_block, start=start, end=end))]


# Reading, comparing, writing.


def _linked(workspace: Path, path: Path) -> bool:
    """Whether `path`, or a folder between the workspace and it, is a symbolic link."""
    inside = path.relative_to(workspace).parts if path.is_relative_to(workspace) else ()
    return path.is_symlink() or any(
        workspace.joinpath(*inside[:n]).is_symlink() for n in range(1, len(inside))
    )


def _read(path: Path) -> str | None:
    """A file's text exactly as stored (no newline translation), or None if it does not exist.
    A link in its place is `LinkRefused`: memctl reads and writes no client file through one."""
    if path.is_symlink():
        raise LinkRefused(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror})") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); the file was left unchanged") from exc


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _diff_lines(text: str | None) -> list[str]:
    lines = (text or "").splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def unified_diff(label: str, current: str | None, desired: str) -> str:
    """A unified diff of a file from `current` (None: it does not exist) to `desired`."""
    before = "/dev/null" if current is None else label
    return "".join(difflib.unified_diff(_diff_lines(current), _diff_lines(desired), before, label))


@dataclass(frozen=True)
class _Step:
    """One file's change, the text to write (if any), and manifest entries to record."""

    change: Change
    text: str | None = None
    record: dict[str, str] = field(default_factory=dict)


def _step(workspace: Path, relative: Path, current: str | None, desired: str) -> _Step:
    path = workspace / relative
    if current == desired:
        return _Step(Change(path, "unchanged"))
    label = path.relative_to(workspace).as_posix() if path.is_relative_to(workspace) else str(path)
    action: Action = "created" if current is None else "updated"
    return _Step(Change(path, action, unified_diff(label, current, desired)), desired)


def _merged_step(workspace: Path, target: _Merged) -> _Step:
    path = workspace / target.path
    current = _read(path)
    try:
        desired = target.merge(current or "")
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}; the file was left unchanged: fix it and run again") from exc
    return _step(workspace, target.path, current, desired)


def _owned_step(workspace: Path, target: _Owned, manifest: dict[str, str]) -> _Step:
    """Write an owned file only if absent, or unchanged since memctl last wrote it."""
    key = target.path.as_posix()
    current = _read(workspace / target.path)
    step = _step(workspace, target.path, current, target.text)
    if current is None or current == target.text or manifest.get(key) == _sha256(current):
        return dataclasses.replace(step, record={key: _sha256(target.text)})
    return _Step(dataclasses.replace(step.change, action="edited-left-alone"))


def _parse_manifest(path: Path, text: str | None) -> dict[str, str]:
    try:
        manifest = _load_json(text or "")
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    if not all(isinstance(value, str) for value in manifest.values()):
        raise ConfigError(f"{path}: expected an object mapping paths to sha256 digests")
    return manifest


def apply(workspace: Path, plan: Plan, *, check: bool = False) -> list[Change]:
    """Configure each client in `plan` in `workspace`; one `Change` per file, in a fixed order.

    With `check`, compute the same changes and diffs and write nothing. Raises
    `ConfigError` naming the file, before writing anything, when a file cannot be merged.
    """
    workspace = workspace.absolute()
    manifest_text = _read(workspace / MANIFEST)
    manifest = _parse_manifest(workspace / MANIFEST, manifest_text)
    steps = [
        _Step(Change(workspace / target.path, "link-left-alone"))
        if _linked(workspace, workspace / target.path)
        else _owned_step(workspace, target, manifest)
        if isinstance(target, _Owned)
        else _merged_step(workspace, target)
        for target in _targets(plan)
    ]
    recorded = dict(sorted({**manifest, **{k: v for step in steps for k, v in step.record.items()}}.items()))
    if recorded != manifest:
        steps.append(_step(workspace, MANIFEST, manifest_text, _dump_json(recorded)))
    if not check:
        created = Created.load(workspace)
        codex_is_new = plan.codex_config is not None and not plan.codex_config.exists()
        for n, step in enumerate(steps):
            if step.text is not None:
                inside = step.change.path.is_relative_to(workspace)
                if inside:
                    _note_creation(created, workspace, step)
                try:
                    write_atomically(step.change.path, step.text, root=workspace if inside else None)
                except LinkRefused:  # planted since it was read: left alone
                    steps[n] = _Step(Change(step.change.path, "link-left-alone"))
        created.save(workspace)
        if plan.codex_config is not None:
            add_user(plan.codex_config, plan.project, created=codex_is_new)
    return [step.change for step in steps]


def _label(workspace: Path, path: Path) -> str:
    return path.relative_to(workspace).as_posix() if path.is_relative_to(workspace) else str(path)


def _note_creation(created: Created, workspace: Path, step: _Step) -> None:
    """Record the file, folders and JSON containers that writing `step` creates."""
    path, label = step.change.path, _label(workspace, step.change.path)
    created.dirs |= new_dirs(workspace, path)
    before = _read(path)
    if before is None:
        created.files.add(label)
    elif before and not before.endswith("\n") and path.suffix != ".json":
        created.unterminated.add(label)
    if path.suffix == ".json" and step.text is not None and label != MANIFEST.as_posix():
        added = new_containers(_load_json(before or ""), _load_json(step.text))
        created.containers[label] = created.containers.get(label, set()) | added


def install_launcher(plan: Plan, *, check: bool = False) -> Change:
    """Bring the launcher the client files start up to date (`_launcher`); its change."""
    action, before, text = write_launcher(plan.launcher, check=check)
    if action in ("kept", "unchanged"):
        return Change(plan.launcher, "unchanged")
    diff = unified_diff(str(plan.launcher), before, text)
    return Change(plan.launcher, "created" if before is None else "updated", diff)


def _unmerged_step(workspace: Path, target: _Merged, created: Created) -> tuple[_Step, bool]:
    """memctl's entries out of one file, and what it created empty again out too; whether
    the file itself goes (memctl created it, and nothing else is left in it)."""
    step = _merged_step(workspace, target)
    path, label = workspace / target.path, _label(workspace, workspace / target.path)
    text = step.text if step.text is not None else _read(path) or ""
    if path.suffix == ".json":
        document = _load_json(text)
        pruned = without_empty(document, created.containers.pop(label, set()))
        if pruned != document:
            text = edit_to(text, pruned)
        empty = not pruned
    else:
        empty = not text.strip()
        if label in created.unterminated and text.endswith("\n"):
            created.unterminated.discard(label)
            text = text.removesuffix("\r\n") if text.endswith("\r\n") else text.removesuffix("\n")
    if label in created.files and empty:
        created.files.discard(label)
        return _Step(Change(path, "removed", unified_diff(label, _read(path), ""))), True
    return _step(workspace, target.path, _read(path), text), False


def remove(workspace: Path, plan: Plan, *, check: bool = False, purge: bool = False) -> list[Change]:
    """Take memctl's entries back out of every client file, and delete the files it owns
    that are as it wrote them; a file that does not exist is skipped. Files, folders and
    JSON members memctl created go too once nothing else is in them, so every file comes
    back as it was before `apply`. The `.gitignore` block that keeps `.memory/` out of git
    stays unless `purge` (the memory is being deleted too). With `check`, report the same
    changes and write nothing.
    """
    workspace = workspace.absolute()
    manifest_text = _read(workspace / MANIFEST)
    manifest = _parse_manifest(workspace / MANIFEST, manifest_text)
    created = Created.load(workspace)
    if plan.codex_config is not None and created_by_memctl(plan.codex_config):
        created.files.add(str(plan.codex_config))
    steps: list[_Step] = []
    deleted: list[Path] = []
    for target in _removals(plan):
        path = workspace / target.path
        current = _read(path)
        if current is None or (target.path == Path(".gitignore") and not purge):
            continue
        if isinstance(target, _Merged):
            step, gone = _unmerged_step(workspace, target, created)
            steps.append(step)
            deleted += [path] if gone else []
            continue
        key = target.path.as_posix()
        if manifest.get(key) == _sha256(current) or current == target.text:
            deleted.append(path)
            steps.append(_Step(Change(path, "removed", unified_diff(key, current, ""))))
            manifest.pop(key, None)
        else:
            steps.append(_Step(Change(path, "edited-left-alone")))
    if manifest_text is not None and not manifest:
        deleted.append(workspace / MANIFEST)
        steps.append(_Step(Change(workspace / MANIFEST, "removed")))
    elif manifest_text is not None:
        steps.append(_step(workspace, MANIFEST, manifest_text, _dump_json(dict(sorted(manifest.items())))))
    if not check:
        for step in steps:
            if step.text is not None:
                inside = step.change.path.is_relative_to(workspace)
                write_atomically(step.change.path, step.text, root=workspace if inside else None)
        for path in deleted:
            path.unlink()
        for directory in sorted(created.dirs, key=lambda d: d.count("/"), reverse=True):
            if (workspace / directory).is_dir() and not any((workspace / directory).iterdir()):
                (workspace / directory).rmdir()
                created.dirs.discard(directory)
        if (workspace / ".memory").is_dir():
            created.save(workspace)
        if plan.codex_config is not None:
            remove_user(plan.codex_config, plan.project)
    return [step.change for step in steps]
