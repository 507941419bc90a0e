"""Template syntax in any value a user supplies never runs in Ansible (issue 32, finding 1).

Each value below holds all three kinds of Jinja syntax: an expression and a statement that
would each create a file in $HOME through a `pipe` lookup if Ansible rendered them, and a
comment that rendering would remove. memctl must provision the literal text (a directory,
a file of that exact name) or refuse it with an error that quotes it; it must never run it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..provision.helpers import memctl, up_json


def _payload(tag: str) -> str:
    """`{{ }}`, `{% %}` and `{# #}` in one value; rendered, it would leave `ran-*-<tag>` in $HOME."""
    return (
        f"{{{{ lookup('pipe', 'cd; touch ran-expression-{tag}') }}}}"
        f"{{% set x = lookup('pipe', 'cd; touch ran-statement-{tag}') %}}"
        f"{{# {tag} #}}"
    )


def _inventory(path: Path, project: dict[str, Any]) -> Path:
    """An inventory of this machine as a user writes it by hand: plain YAML strings, no
    `!unsafe`, and Ansible's own template for the interpreter (which must still work)."""
    localhost = {
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "memctl_projects": [project],
    }
    path.write_text(json.dumps({"all": {"hosts": {"localhost": localhost}}}), encoding="utf-8")
    return path


def _ran() -> list[str]:
    """What rendering left in $HOME (the pipe lookups run in it)."""
    return sorted(path.name for path in Path(os.environ["HOME"]).glob("ran-*"))


def _smoke(report: dict[str, Any]) -> tuple[str, str]:
    """The one project's MCP round trip: what it saved and what search found."""
    [record] = report["projects"]
    return record["smoke"]["saved"], record["smoke"]["found"]


def test_a_directory_and_a_codex_path_with_template_syntax_are_provisioned_as_written(tmp_path: Path) -> None:
    workspace = tmp_path / f"pj{_payload('dir')}"
    workspace.mkdir()
    codex = tmp_path / f"codex{_payload('codex')}.toml"
    first = up_json("--project", str(workspace), "--codex-config", str(codex), state=tmp_path / "state")
    assert _smoke(first) == ("created", "memctl/setup")
    assert (workspace / ".memory" / "bridge.token").is_file()
    assert "[mcp_servers.memory]" in codex.read_text(encoding="utf-8")
    # the scope memctl pinned from the directory's name comes back from config.toml as data
    assert _payload("dir") in (workspace / ".memory" / "config.toml").read_text(encoding="utf-8")
    again = up_json("--project", str(workspace), "--codex-config", str(codex), state=tmp_path / "state")
    assert again["changed"] == 0, json.dumps(again, indent=1)
    down = memctl(
        "down", "--project", str(workspace), "--codex-config", str(codex), "--json", state=tmp_path / "state"
    )
    assert down.returncode == 0, down.stdout + down.stderr
    assert not (workspace / ".mcp.json").exists()
    assert _ran() == []


def test_an_inventorys_values_with_template_syntax_are_provisioned_as_written(tmp_path: Path) -> None:
    workspace = tmp_path / f"inv{_payload('inventory')}"
    workspace.mkdir()
    project = {
        "slug": "app",
        "workspace": str(workspace),
        "clients": ["claude"],
        "codex_config": str(tmp_path / f"codex{_payload('inventory-codex')}.toml"),
        # a URL: its `#` would start a fragment, so the expression and the statement only
        "knowledge_store": f"sqlite://{tmp_path / _payload('store').split('{#')[0]}.db",
    }
    inventory = _inventory(tmp_path / "inventory.yml", project)
    report = up_json("--inventory", str(inventory), state=tmp_path / "state")
    assert _smoke(report) == ("created", "memctl/setup")
    assert (workspace / ".mcp.json").is_file()
    assert Path(project["knowledge_store"].removeprefix("sqlite://")).is_file()
    assert Path(project["codex_config"]).is_file()
    assert _ran() == []


def test_a_registered_project_with_template_syntax_is_provisioned_as_written(tmp_path: Path) -> None:
    workspace = tmp_path / f"reg{_payload('registry')}"
    workspace.mkdir()
    added = memctl("projects", "add", str(workspace), "--slug", "reg", "--json", state=tmp_path / "state")
    assert added.returncode == 0, added.stdout + added.stderr
    report = up_json("--all", state=tmp_path / "state")
    assert _smoke(report) == ("created", "memctl/setup")
    assert (workspace / ".memory" / "entries.db").is_file()
    assert _ran() == []


def test_template_syntax_in_a_slug_or_a_client_name_is_refused_naming_it(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    for field, value in (("slug", _payload("slug")), ("clients", [_payload("client")])):
        project = {"slug": "app", "workspace": str(workspace), field: value}
        inventory = _inventory(tmp_path / f"{field}.yml", project)
        run = memctl("up", "--inventory", str(inventory), "--json", state=tmp_path / "state")
        assert run.returncode == 2, run.stdout + run.stderr
        message = json.loads(run.stdout)["message"]
        assert f"localhost.memctl_projects[0].{field}" in message
        assert repr(value if isinstance(value, str) else value[0]) in message
    assert list(workspace.iterdir()) == []
    assert _ran() == []
