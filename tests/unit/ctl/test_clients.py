"""Client configuration applied to a workspace: every file kind, check mode, re-runs."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.provision._clients import (
    MANIFEST,
    SKILLS,
    Change,
    Plan,
    apply,
    hook_entries,
    remove,
    server_entry,
)
from memctl.provision._merge import HOOK_SIGNATURE
from memory_bridge import ConfigError

PROJECT = Path("/work/app")
ENTRY = {"command": "${HOME}/.local/bin/memctl", "args": ["serve"]}
"""Claude Code's entry: the launcher through ${HOME}; the server finds the project from its cwd."""
EDITOR_ENTRY = {
    "command": "${userHome}/.local/bin/memctl",
    "args": ["serve", "--project", "${workspaceFolder}"],
}
"""Cursor's and VS Code's entry, in their own variables."""


def local_entry(plan: Plan) -> dict[str, Any]:
    """The entry of files that live outside git (Codex, .agents/mcp.json): the launcher's path."""
    return {"command": str(plan.launcher), "args": ["serve"]}


WORKSPACE_FILES = {
    ".mcp.json",
    ".claude/settings.json",
    ".cursor/mcp.json",
    ".vscode/mcp.json",
    ".agents/mcp.json",
    ".agents/hooks.json",
    ".agents/README.md",
    ".gitignore",
    ".memory/owned.json",
    *(f".claude/skills/{skill.name}/SKILL.md" for skill in SKILLS),
    *(f".agents/rules/{skill.name}.md" for skill in SKILLS),
}


def snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under root: its bytes, mode and mtime (a write shows even if bytes are equal)."""
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            info = path.stat()
            files[path.relative_to(root).as_posix()] = (path.read_bytes(), info.st_mode, info.st_mtime_ns)
    return files


def actions(changes: list[Change], root: Path) -> dict[str, str]:
    return {change.path.relative_to(root).as_posix(): change.action for change in changes}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


@pytest.fixture
def plan() -> Plan:
    return Plan(project=PROJECT, hooks=True)


def test_a_fresh_workspace_gets_every_file_and_a_second_run_writes_nothing(
    tmp_path: Path, plan: Plan
) -> None:
    first = apply(tmp_path, plan)
    assert actions(first, tmp_path) == dict.fromkeys(WORKSPACE_FILES, "created")
    assert all(change.diff and change.diff.startswith("--- /dev/null") for change in first)
    assert set(snapshot(tmp_path)) == WORKSPACE_FILES | {".memory/created.json"}
    before = snapshot(tmp_path)
    second = apply(tmp_path, plan)
    assert {change.action for change in second} == {"unchanged"}
    assert all(change.diff is None for change in second)
    assert snapshot(tmp_path) == before


def test_each_client_gets_its_server_entry(tmp_path: Path, plan: Plan) -> None:
    apply(tmp_path, plan)
    assert read_json(tmp_path / ".mcp.json") == {"mcpServers": {"memory": ENTRY}}
    assert read_json(tmp_path / ".cursor/mcp.json") == {"mcpServers": {"memory": EDITOR_ENTRY}}
    assert read_json(tmp_path / ".agents/mcp.json") == {"mcpServers": {"memory": local_entry(plan)}}
    vscode = {"servers": {"memory": {"type": "stdio", **EDITOR_ENTRY}}}
    assert read_json(tmp_path / ".vscode/mcp.json") == vscode
    settings_json = read_json(tmp_path / ".claude/settings.json")
    assert settings_json == {
        "hooks": hook_entries(plan),
        "enabledMcpjsonServers": ["memory"],
    }
    assert read_json(tmp_path / ".agents/hooks.json") == {"hooks": hook_entries(plan)}
    gitignore = "# >>> memctl >>>\n/.memory/\n/.agents/mcp.json\n# <<< memctl <<<\n"
    assert (tmp_path / ".gitignore").read_text() == gitignore
    text = (tmp_path / ".mcp.json").read_text()
    assert text == json.dumps({"mcpServers": {"memory": ENTRY}}, indent=2) + "\n"


def test_skills_are_directories_with_front_matter_and_rules_are_plain(tmp_path: Path, plan: Plan) -> None:
    apply(tmp_path, plan)
    for skill in SKILLS:
        text = (tmp_path / ".claude/skills" / skill.name / "SKILL.md").read_text()
        front, body = text.removeprefix("---\n").split("\n---\n", 1)
        fields = dict(line.split(": ", 1) for line in front.splitlines())
        assert fields["name"] == skill.name
        assert json.loads(fields["description"]) == skill.description
        rule = (tmp_path / ".agents/rules" / f"{skill.name}.md").read_text()
        assert body == "\n" + rule and rule.startswith(f"# {skill.title}\n")
    readme = (tmp_path / ".agents/README.md").read_text()
    assert json.dumps(str(plan.launcher)) in readme and "rules/memory-save.md" in readme


def test_user_entries_pass_through_and_our_entry_is_replaced_not_duplicated(
    tmp_path: Path, plan: Plan
) -> None:
    user_mcp = {
        "mcpServers": {"github": {"command": "gh", "env": {"T": "x"}}, "memory": {"command": "docker"}},
        "zz": [1, {"é": None}],
    }
    write(tmp_path / ".mcp.json", json.dumps(user_mcp))
    write(
        tmp_path / ".vscode/mcp.json", json.dumps({"inputs": [{"id": "k"}], "servers": {"x": {"url": "u"}}})
    )
    user_settings = {
        "permissions": {"allow": ["Bash(make:*)"]},
        "enabledMcpjsonServers": ["github"],
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}],
            "SessionStart": [
                {"matcher": "", "hooks": [{"type": "command", "command": "echo hi"}]},
                {"hooks": [{"type": "command", "command": f"memctl hook old {HOOK_SIGNATURE}"}]},
            ],
        },
    }
    write(tmp_path / ".claude/settings.json", json.dumps(user_settings))
    changes = actions(apply(tmp_path, plan), tmp_path)
    assert (
        changes[".mcp.json"] == changes[".claude/settings.json"] == changes[".vscode/mcp.json"] == "updated"
    )
    mcp = read_json(tmp_path / ".mcp.json")
    assert mcp == {
        "mcpServers": {"github": user_mcp["mcpServers"]["github"], "memory": ENTRY},
        "zz": user_mcp["zz"],
    }
    assert list(mcp["mcpServers"]) == ["github", "memory"]
    vscode = read_json(tmp_path / ".vscode/mcp.json")
    assert vscode["inputs"] == [{"id": "k"}] and list(vscode["servers"]) == ["x", "memory"]
    merged = read_json(tmp_path / ".claude/settings.json")
    assert merged["permissions"] == user_settings["permissions"]
    assert merged["enabledMcpjsonServers"] == ["github", "memory"]
    assert merged["hooks"]["Stop"] == user_settings["hooks"]["Stop"]
    assert merged["hooks"]["SessionStart"] == [
        user_settings["hooks"]["SessionStart"][0],
        *hook_entries(plan)["SessionStart"],
    ]
    commands = json.dumps(merged)
    assert commands.count(HOOK_SIGNATURE) == len(hook_entries(plan))


def test_a_file_in_the_users_own_format_holding_our_entry_is_left_as_it_is(
    tmp_path: Path, plan: Plan
) -> None:
    text = '{"mcpServers":{"memory":' + json.dumps(EDITOR_ENTRY) + "}}"
    write(tmp_path / ".cursor/mcp.json", text)
    assert actions(apply(tmp_path, plan), tmp_path)[".cursor/mcp.json"] == "unchanged"
    assert (tmp_path / ".cursor/mcp.json").read_text() == text


@pytest.mark.parametrize("text", ["", "  \n"])
def test_an_empty_json_file_counts_as_an_empty_object(tmp_path: Path, plan: Plan, text: str) -> None:
    write(tmp_path / ".mcp.json", text)
    assert actions(apply(tmp_path, plan), tmp_path)[".mcp.json"] == "updated"
    assert read_json(tmp_path / ".mcp.json") == {"mcpServers": {"memory": ENTRY}}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (".mcp.json", '{"mcpServers": {', "not valid JSON"),
        (".claude/settings.json", "[1, 2]", "not a JSON object"),
        (".agents/hooks.json", '{"hooks": NaN}', "NaN is not a JSON value"),
        (".cursor/mcp.json", '{"mcpServers": {"a": 1, "a": 2}}', 'the key "a" appears twice'),
        (".vscode/mcp.json", '{"servers": []}', '"servers" is an array'),
        (".claude/settings.json", '{"hooks": {"PreCompact": "x"}}', '"hooks.PreCompact" is a string'),
        (MANIFEST.as_posix(), "{", "not valid JSON"),
    ],
)
def test_a_file_that_cannot_be_merged_stops_the_run_before_any_write(
    tmp_path: Path, plan: Plan, name: str, text: str, message: str
) -> None:
    write(tmp_path / name, text)
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError, match=message) as raised:
        apply(tmp_path, plan)
    assert str(tmp_path / name) in str(raised.value)
    assert snapshot(tmp_path) == before


def test_non_utf8_is_refused(tmp_path: Path, plan: Plan) -> None:
    (tmp_path / ".gitignore").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match=r"\.gitignore: not UTF-8"):
        apply(tmp_path, plan)


def test_an_edited_owned_file_is_reported_and_left_alone(tmp_path: Path, plan: Plan) -> None:
    apply(tmp_path, plan)
    skill = tmp_path / ".claude/skills/memory-recall/SKILL.md"
    edited = skill.read_text().replace("Recall project memory", "Recall OUR memory")
    write(skill, edited)
    manifest = (tmp_path / MANIFEST).read_bytes()
    for _ in range(2):
        changes = {c.path: c for c in apply(tmp_path, plan)}
        assert changes[skill].action == "edited-left-alone"
        assert "-# Recall OUR memory" in (changes[skill].diff or "")
        assert skill.read_text() == edited
        assert (tmp_path / MANIFEST).read_bytes() == manifest
        assert {c.action for p, c in changes.items() if p != skill} == {"unchanged"}


def test_an_owned_file_memctl_wrote_is_updated_and_one_reverted_by_the_user_is_unchanged(
    tmp_path: Path, plan: Plan
) -> None:
    readme = tmp_path / ".agents/README.md"
    old = "# an older README memctl wrote\n"
    write(readme, old)
    write(tmp_path / MANIFEST, json.dumps({".agents/README.md": hashlib.sha256(old.encode()).hexdigest()}))
    changes = actions(apply(tmp_path, plan), tmp_path)
    assert changes[".agents/README.md"] == "updated" and changes[MANIFEST.as_posix()] == "updated"
    manifest = read_json(tmp_path / MANIFEST)
    assert manifest[".agents/README.md"] == hashlib.sha256(readme.read_bytes()).hexdigest()
    assert list(manifest) == sorted(manifest)


def test_an_owned_file_memctl_did_not_write_is_left_alone_unless_identical(
    tmp_path: Path, plan: Plan
) -> None:
    apply(tmp_path, plan)
    rule = tmp_path / ".agents/rules/plan-capture.md"
    write(tmp_path / MANIFEST, "{}")
    write(rule, "my own rule\n")
    changes = actions(apply(tmp_path, plan), tmp_path)
    assert changes[".agents/rules/plan-capture.md"] == "edited-left-alone"
    assert changes[".agents/rules/memory-save.md"] == "unchanged"
    assert rule.read_text() == "my own rule\n"
    assert ".agents/rules/memory-save.md" in read_json(tmp_path / MANIFEST)
    assert ".agents/rules/plan-capture.md" not in read_json(tmp_path / MANIFEST)


def test_a_deleted_owned_file_is_written_again(tmp_path: Path, plan: Plan) -> None:
    apply(tmp_path, plan)
    (tmp_path / ".agents/README.md").unlink()
    assert actions(apply(tmp_path, plan), tmp_path)[".agents/README.md"] == "created"


def test_check_mode_reports_the_same_changes_and_writes_nothing(tmp_path: Path, plan: Plan) -> None:
    write(tmp_path / ".gitignore", "node_modules/\n")
    write(tmp_path / ".mcp.json", '{"mcpServers": {"other": {"command": "x"}}}')
    before = snapshot(tmp_path)
    checked = apply(tmp_path, plan, check=True)
    assert snapshot(tmp_path) == before
    applied = apply(tmp_path, plan)
    assert checked == applied
    gitignore = next(c for c in checked if c.path.name == ".gitignore")
    assert gitignore.action == "updated"
    assert gitignore.diff is not None and "+# >>> memctl >>>" in gitignore.diff
    assert {c.action for c in apply(tmp_path, plan, check=True)} == {"unchanged"}


def test_gitignore_keeps_the_users_lines(tmp_path: Path, plan: Plan) -> None:
    write(tmp_path / ".gitignore", "dist/\r\n# >>> memctl >>>\r\n/old/\r\n# <<< memctl <<<\r\n*.log")
    apply(tmp_path, plan)
    expected = "dist/\r\n# >>> memctl >>>\r\n/.memory/\r\n/.agents/mcp.json\r\n# <<< memctl <<<\r\n*.log\r\n"
    assert (tmp_path / ".gitignore").read_bytes() == expected.encode()


CODEX = """\
# my Codex settings
model = "o3"

[mcp_servers.memory]
command = "docker"   # the seed's container
args = ["exec", "-i", "app-memory", "node", "src/index.js"]

# keep this comment
[mcp_servers.github]
command = "gh"

[profiles.fast]
model = "o4-mini"
"""


def test_codex_config_is_merged_only_when_its_path_is_given(tmp_path: Path) -> None:
    codex = tmp_path / "codex-home/config.toml"
    write(codex, CODEX)
    assert str(codex) not in {str(c.path) for c in apply(tmp_path / "ws", Plan(project=PROJECT))}
    assert codex.read_text() == CODEX
    changes = {c.path: c for c in apply(tmp_path / "ws", Plan(project=PROJECT, codex_config=codex))}
    assert changes[codex].action == "updated"
    assert f"--- {codex}" in (changes[codex].diff or "")
    text = codex.read_text()
    assert text.startswith("# my Codex settings\n") and "# keep this comment\n[mcp_servers.github]" in text
    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"] == {
        "memory": local_entry(Plan(project=PROJECT)),
        "github": {"command": "gh"},
    }
    assert parsed["profiles"] == {"fast": {"model": "o4-mini"}}
    again = {c.path: c.action for c in apply(tmp_path / "ws", Plan(project=PROJECT, codex_config=codex))}
    assert again[codex] == "unchanged"


def test_codex_config_is_created_and_bad_toml_is_refused(tmp_path: Path) -> None:
    codex = tmp_path / "new/config.toml"
    apply(tmp_path / "ws", Plan(project=PROJECT, codex_config=codex))
    assert tomllib.loads(codex.read_text()) == {"mcp_servers": {"memory": local_entry(Plan(project=PROJECT))}}
    write(codex, "model = \n")
    with pytest.raises(ConfigError, match=f"{codex}: the file is not valid TOML"):
        apply(tmp_path / "ws", Plan(project=PROJECT, codex_config=codex))
    assert codex.read_text() == "model = \n"


def test_clients_can_be_chosen_and_the_server_named(tmp_path: Path) -> None:
    plan = Plan(project=PROJECT, server_name="app-memory", clients=frozenset({"cursor"}))
    assert actions(apply(tmp_path, plan), tmp_path) == {
        ".cursor/mcp.json": "created",
        ".gitignore": "created",
    }
    assert read_json(tmp_path / ".cursor/mcp.json") == {
        "mcpServers": {"app-memory": server_entry(plan, "cursor")}
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"project": Path("relative")}, "absolute"),
        ({"project": PROJECT, "server_name": "a b"}, "server name"),
        (
            {"project": PROJECT, "codex_config": Path("~/.codex/config.toml")},
            "codex_config must be an absolute",
        ),
        ({"project": PROJECT, "clients": frozenset({"emacs"})}, "unknown clients"),
    ],
)
def test_a_bad_plan_is_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Plan(**kwargs)


def test_file_modes_are_kept_and_new_files_are_0644(tmp_path: Path, plan: Plan) -> None:
    settings_json = tmp_path / ".claude/settings.json"
    write(settings_json, "{}")
    settings_json.chmod(0o600)
    old_umask = os.umask(0o077)
    try:
        apply(tmp_path, plan)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(settings_json.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / ".mcp.json").stat().st_mode) == 0o644
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_symlinked_config_is_left_alone(tmp_path: Path, plan: Plan) -> None:
    """Issue 32: memctl never writes through a link in the workspace, even to a dotfile."""
    target = tmp_path / "dotfiles/mcp.json"
    write(target, '{"mcpServers": {"x": {"command": "y"}}}')
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws/.mcp.json").symlink_to(target)
    changes = apply(tmp_path / "ws", plan)
    assert actions(changes, tmp_path / "ws")[".mcp.json"] == "link-left-alone"
    assert (tmp_path / "ws/.mcp.json").is_symlink()
    assert read_json(target)["mcpServers"] == {"x": {"command": "y"}}


RESERVED = {"mcpServers", "hooks", "enabledMcpjsonServers"}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
user_hooks = st.dictionaries(
    st.sampled_from(["SessionStart", "PreCompact", "Stop"]),
    st.lists(
        st.fixed_dictionaries(
            {
                "hooks": st.lists(
                    st.fixed_dictionaries({"type": st.just("command"), "command": st.text(max_size=8)})
                )
            },
            optional={"matcher": st.text(max_size=4)},
        ),
        max_size=2,
    ),
)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(st.text(max_size=5).filter(lambda k: k not in RESERVED), json_values, max_size=3),
    st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    user_hooks,
    st.sampled_from([0, 2, 4]),
)
def test_files_with_any_user_content_settle_after_one_run(
    extra: dict[str, Any], servers: dict[str, Any], hooks: dict[str, Any], indent: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        user_mcp = {**extra, "mcpServers": servers}
        user_settings = {**extra, "hooks": hooks}
        write(root / ".mcp.json", json.dumps(user_mcp, indent=indent))
        write(root / ".claude/settings.json", json.dumps(user_settings, indent=indent))
        apply(root, Plan(project=PROJECT, clients=frozenset({"claude"}), hooks=True))
        after_first = snapshot(root)
        assert {
            c.action for c in apply(root, Plan(project=PROJECT, clients=frozenset({"claude"}), hooks=True))
        } == {"unchanged"}
        assert snapshot(root) == after_first
        mcp = read_json(root / ".mcp.json")
        assert mcp["mcpServers"]["memory"] == ENTRY
        assert {k: v for k, v in mcp["mcpServers"].items() if k != "memory"} == {
            k: v for k, v in servers.items() if k != "memory"
        }
        assert {k: v for k, v in mcp.items() if k != "mcpServers"} == extra


def test_hooks_are_left_out_unless_asked_for(tmp_path: Path) -> None:
    """Until the capture pipeline exists, `memctl up` wires no hook that would fail in a session."""
    changes = apply(tmp_path / "ws", Plan(project=PROJECT))
    names = {c.path.relative_to(tmp_path / "ws").as_posix() for c in changes}
    assert ".agents/hooks.json" not in names
    settings = json.loads((tmp_path / "ws" / ".claude" / "settings.json").read_text())
    assert "hooks" not in settings and settings["enabledMcpjsonServers"] == ["memory"]


USER_FILES = {
    ".mcp.json": '{\n    "mcpServers": {\n        "github": {"command": "gh",  "args": []}\n    },\n'
    '    "z": 1\n}',
    ".claude/settings.json": '{\n\t"permissions": {"allow": ["Bash(ls)"]},\n\t"hooks": {\n\t\t"Stop": [\n'
    '\t\t\t{"hooks": [{"type": "command", "command": "notify"}]}\n\t\t]\n\t}\n}\n',
    ".vscode/mcp.json": '{"inputs":[{"id":"k"}],"servers":{"x":{"url":"u"}}}\r\n',
    ".gitignore": "dist/\n*.log",
}


def test_up_then_down_gives_back_every_file_byte_for_byte(tmp_path: Path, plan: Plan) -> None:
    for name, text in USER_FILES.items():
        write(tmp_path / name, text)
    before = {name: (tmp_path / name).read_bytes() for name in USER_FILES}
    apply(tmp_path, plan)
    mcp = (tmp_path / ".mcp.json").read_text()
    assert mcp.startswith('{\n    "mcpServers": {\n        "github": {"command": "gh",  "args": []},\n'), mcp
    assert '\n        "memory": {\n            "command"' in mcp, "our entry in the file's own indent"
    assert (tmp_path / ".vscode/mcp.json").read_text().count("\n") == 1, "a one-line file stays one line"

    remove(tmp_path, plan, purge=True)
    after = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if ".memory" not in p.parts}
    assert after == {
        ".mcp.json",
        ".claude",
        ".claude/settings.json",
        ".vscode",
        ".vscode/mcp.json",
        ".gitignore",
    }
    assert {name: (tmp_path / name).read_bytes() for name in USER_FILES} == before


def test_down_of_a_fresh_workspace_leaves_nothing_but_the_memory(tmp_path: Path, plan: Plan) -> None:
    (tmp_path / ".memory").mkdir()
    apply(tmp_path, plan)
    changes = remove(tmp_path, plan)
    assert {p.name for p in tmp_path.iterdir()} == {".memory", ".gitignore"}, (
        "the ignore rule stays with .memory/"
    )
    assert ".memory/" in (tmp_path / ".gitignore").read_text()
    assert sum(c.action == "removed" for c in changes) >= len(WORKSPACE_FILES) - 1
    remove(tmp_path, plan, purge=True)
    assert {p.name for p in tmp_path.iterdir()} == {".memory"}


def test_a_users_addition_to_our_entry_survives_a_re_run(tmp_path: Path, plan: Plan) -> None:
    apply(tmp_path, plan)
    path = tmp_path / ".mcp.json"
    document = read_json(path)
    document["mcpServers"]["memory"]["env"] = {"MEMCTL_LOG_LEVEL": "DEBUG"}
    path.write_text(json.dumps(document, indent=2) + "\n")
    edited = path.read_bytes()
    assert actions(apply(tmp_path, plan), tmp_path)[".mcp.json"] == "unchanged"
    assert path.read_bytes() == edited


def test_one_codex_config_serves_every_project_and_down_keeps_it_while_one_is_left(tmp_path: Path) -> None:
    codex = tmp_path / "codex-home/config.toml"
    projects = [tmp_path / name for name in ("app", "app2", "app3")]
    plans = [Plan(project=p, clients=frozenset({"claude"}), codex_config=codex) for p in projects]
    for plan in plans:
        apply(plan.project, plan)
    entries = tomllib.loads(codex.read_text())["mcp_servers"]
    assert entries == {"memory": local_entry(plans[0])}, "one entry, naming no project"
    text = codex.read_text()
    assert all(str(p) not in text for p in projects)
    remove(projects[0], plans[0])
    assert codex.read_text() == text, "app2 and app3 still use it"
    remove(projects[1], plans[1])
    assert codex.read_text() == text
    remove(projects[2], plans[2])
    assert not codex.exists(), "memctl created it; the last project took it back out"
