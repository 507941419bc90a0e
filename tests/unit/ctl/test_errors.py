"""One error boundary: the CLI group renders every MemctlError once, with its class's own code."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import memctl
import memory_bridge
from memctl import _errors, cli
from memctl._errors import EXIT_CODES, ExitStatus, PlaybookFailed
from memctl.provision._playbook import PlaybookRun
from memory_bridge import EmbedderUnavailable, InvalidInput, MemctlError, MetadataPending, StoreUnavailable

ROOT = Path(__file__).resolve().parents[3]


def every_error_class() -> set[type[MemctlError]]:
    """Every MemctlError subclass defined anywhere in memory_bridge or memctl."""
    for package in (memory_bridge, memctl):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not module.name.endswith("__main__"):
                importlib.import_module(module.name)
    found: set[type[MemctlError]] = set()
    todo: list[type[MemctlError]] = [MemctlError]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith(("memory_bridge", "memctl")):
            found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def instance(cls: type[MemctlError]) -> MemctlError:
    """An error of the class, with the message `it broke [here]` (brackets: not markup)."""
    message = "it broke [here]"
    if cls is InvalidInput:
        return InvalidInput("it", "broke [here]")
    if cls is PlaybookFailed:
        return PlaybookFailed(message, PlaybookRun("site", Path("run.log")))
    if cls is MetadataPending:
        return MetadataPending("doc-1", True, StoreUnavailable(message))
    if cls is EmbedderUnavailable:
        return EmbedderUnavailable(message)
    return cls(message)


def test_every_error_class_has_its_own_exit_code() -> None:
    classes = every_error_class()
    assert classes - set(EXIT_CODES) == set(), "give each new error class a code in memctl._errors.EXIT_CODES"
    codes = [EXIT_CODES[cls][0] for cls in classes]
    assert len(set(codes)) == len(codes)
    assert 0 not in codes


def test_the_docs_and_the_drawn_tree_show_the_table() -> None:
    cli_md = (ROOT / "docs" / "cli.md").read_text()
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \| (.+) \|$", cli_md, re.MULTILINE)
    assert rows == [
        (str(c), cls.__name__, m) for cls, (c, m) in sorted(EXIT_CODES.items(), key=lambda i: i[1])
    ]
    drawn = dict(re.findall(r"^\s+(\d+)\s+[│├└─ ]*(\w+)\s", _errors.__doc__ or "", re.MULTILINE))
    assert {name: int(code) for code, name in drawn.items()} == {
        cls.__name__: code for cls, (code, _) in EXIT_CODES.items()
    }


def _command() -> Any:
    from memctl.commands._output import json_option

    @click.command()
    @click.option("--project", type=click.Path())
    @json_option
    def boom(project: str | None, as_json: bool) -> None:
        raise _raising[0]

    return boom


_raising: list[MemctlError] = []
boom = _command()
nested = click.Group("nested", commands={"boom": _command()})


@pytest.fixture
def raising(monkeypatch: pytest.MonkeyPatch) -> list[MemctlError]:
    monkeypatch.setitem(cli.COMMANDS, "boom", f"{__name__}:boom")
    monkeypatch.setitem(cli.COMMANDS, "nested", f"{__name__}:nested")
    _raising.clear()
    return _raising


@pytest.mark.parametrize(
    "cls", sorted(EXIT_CODES, key=lambda cls: EXIT_CODES[cls][0]), ids=lambda c: c.__name__
)
def test_a_command_raising_the_class_exits_with_its_code(
    cls: type[MemctlError], raising: list[MemctlError]
) -> None:
    error = instance(cls)
    raising.append(error)
    code = EXIT_CODES[cls][0]

    result = CliRunner().invoke(cli.cli, ["boom", "--project", "x", "--json"])
    assert result.exit_code == code, result.output
    assert json.loads(result.stdout) == {
        "ok": False,
        "error": cls.__name__,
        "message": str(error),
        "exit_code": code,
    }
    assert result.stderr == ""

    result = CliRunner().invoke(cli.cli, ["nested", "boom"])
    assert result.exit_code == code
    assert result.stdout == "" and result.stderr.strip() == f"error: {error}"


def test_json_given_first_or_last_is_seen(raising: list[MemctlError]) -> None:
    raising.append(InvalidInput("it", "broke"))
    for args in (["boom", "--json", "--project", "x"], ["nested", "boom", "--project", "x", "--json"]):
        result = CliRunner().invoke(cli.cli, args)
        assert result.exit_code == 7 and json.loads(result.stdout)["error"] == "InvalidInput"


def test_a_real_command_reports_through_the_group(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Any:
        raise StoreUnavailable("registry on a dead disk")

    monkeypatch.setattr("memctl.commands.projects.read_registry", broken)
    result = CliRunner().invoke(cli.cli, ["projects", "list", "--json"])
    assert result.exit_code == 5
    assert json.loads(result.stdout)["message"] == "registry on a dead disk"


def test_no_command_module_catches_the_whole_tree() -> None:
    commands = ROOT / "ctl" / "memctl" / "commands"
    for path in commands.glob("*.py"):
        assert not re.search(r"except \(?[\w, ]*MemctlError", path.read_text()), path.name


def test_every_exit_status_but_ok_is_one_row_of_the_table() -> None:
    statuses = [status for status, _ in EXIT_CODES.values()]
    assert sorted(statuses) == [status for status in ExitStatus if status is not ExitStatus.OK]


_LITERAL_EXITS = {
    "SystemExit": re.compile(r"\bSystemExit\(\s*-?\d"),
    "sys.exit or ctx.exit": re.compile(r"\b(?:sys|ctx)\.exit\(\s*-?\d"),
}
_TREES = {"SystemExit": ("ctl", "bridge", "collections"), "sys.exit or ctx.exit": ("ctl", "collections")}


def test_no_command_exits_with_a_bare_number() -> None:
    """Every exit code comes from the one table (`ExitStatus`), so two meanings never share a number."""
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for kind, pattern in _LITERAL_EXITS.items()
        for tree in _TREES[kind]
        for path in sorted((ROOT / tree).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == [], "exit with a memctl._errors.ExitStatus, not a number:\n" + "\n".join(found)
