"""Issue 35: VS Code and Cursor files with comments or trailing commas (JSONC) no longer stop `up`.

Each file keeps every byte outside memctl's entry, a second run writes nothing, `down` gives
the file back byte for byte, and a file broken beyond JSONC is refused with nothing written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from memctl.api.clients import Plan, apply, remove
from memctl.provision._proof import launches
from memory_bridge import ConfigError

VSCODE = """{
\t// Servers this workspace starts.
\t"servers": {
\t\t"github": {
\t\t\t"type": "http",
\t\t\t"url": "https://example.invalid/mcp/", // the team's
\t\t},
\t\t/* "old": {"command": "old"}, */
\t},
\t"inputs": [
\t\t{"id": "token", "type": "promptString",}, // asked once
\t],
}
"""

CURSOR = """// Cursor's servers, kept by hand.
{
  "mcpServers": {
    "docs": {"command": "docs-mcp", "args": ["--stdio",],} // last one
  }, /* the rest is Cursor's */
}
"""

CURSOR_EMPTY = '{\n  "mcpServers": {\n    // nothing yet\n  },\n}\n'

VSCODE_ENTRY = """
\t\t"memory": {
\t\t\t"type": "stdio",
\t\t\t"command": "${userHome}/.local/bin/memctl",
\t\t\t"args": [
\t\t\t\t"serve",
\t\t\t\t"--project",
\t\t\t\t"${workspaceFolder}"
\t\t\t]
\t\t}"""

CURSOR_ENTRY = """
    "memory": {
      "command": "${userHome}/.local/bin/memctl",
      "args": [
        "serve",
        "--project",
        "${workspaceFolder}"
      ]
    }"""

FILES = {".vscode/mcp.json": VSCODE, ".cursor/mcp.json": CURSOR}
EXPECTED = {
    ".vscode/mcp.json": VSCODE.replace("\t\t},\n\t\t/*", "\t\t}," + VSCODE_ENTRY + ",\n\t\t/*"),
    ".cursor/mcp.json": CURSOR.replace("],} // last one", "],}, // last one" + CURSOR_ENTRY),
}
"""Our entry goes last; after a comment that ends the last line, not before it; a trailing
comma stays trailing; a missing one is added where it belongs."""


def write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode())


def read(root: Path, names: Iterable[str]) -> dict[str, str]:
    return {name: (root / name).read_bytes().decode() for name in names}


@pytest.fixture
def plan() -> Plan:
    return Plan(project=Path("/work/app"), clients=frozenset({"vscode", "cursor"}))


def test_up_keeps_every_byte_outside_our_entry_and_settles(tmp_path: Path, plan: Plan) -> None:
    write(tmp_path, FILES)
    changes = apply(tmp_path, plan)
    assert {c.action for c in changes if c.path.name == "mcp.json"} == {"updated"}
    assert read(tmp_path, FILES) == EXPECTED

    changes = apply(tmp_path, plan)
    assert {c.action for c in changes if c.path.name == "mcp.json"} == {"unchanged"}
    assert read(tmp_path, FILES) == EXPECTED


def test_the_launch_proof_reads_our_entry_from_jsonc(tmp_path: Path, plan: Plan) -> None:
    write(tmp_path, FILES)
    apply(tmp_path, plan)
    assert {name for launch in launches(tmp_path, "memory") for name in launch.files} == set(FILES)


def test_down_gives_back_the_users_jsonc_byte_for_byte(tmp_path: Path, plan: Plan) -> None:
    files = {**FILES, ".cursor/mcp.json": CURSOR_EMPTY}
    write(tmp_path, files)
    apply(tmp_path, plan)
    assert '    // nothing yet\n    "memory": {' in (tmp_path / ".cursor/mcp.json").read_text()
    remove(tmp_path, plan)
    assert read(tmp_path, files) == files


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{\n  "servers": {,}\n}\n', "Expecting property name"),
        ('{\n  "servers": {} /* never closed\n}\n', r"a /\* comment is not closed"),
        ("{\n  'servers': {}\n}\n", "Expecting property name"),
    ],
)
def test_a_broken_file_is_named_with_what_to_do_and_nothing_is_written(
    tmp_path: Path, plan: Plan, text: str, problem: str
) -> None:
    write(tmp_path, {".vscode/mcp.json": text})
    with pytest.raises(ConfigError, match=problem) as raised:
        apply(tmp_path, plan)
    message = str(raised.value)
    assert str(tmp_path / ".vscode/mcp.json") in message
    assert "line 2" in message
    assert "fix it and run again" in message
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        ".vscode",
        ".vscode/mcp.json",
    ]
    assert (tmp_path / ".vscode/mcp.json").read_text() == text
