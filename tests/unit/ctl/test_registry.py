"""`memctl projects add|remove` edit the user's inventory as a round trip: their comments stay."""

from __future__ import annotations

from pathlib import Path

from memctl.api.project import Project
from memctl.provision._registry import add_project, remove_project

COMMENTED = """\
# My machines. Keep this comment.
all:
    vars:
        ansible_user: me  # the login
    hosts:
        localhost:
            ansible_connection: local
            ansible_python_interpreter: "{{ ansible_playbook_python }}"
            # every project on this laptop
            memctl_projects:
                -   slug: "first"  # the original
                    workspace: FIRST
                    clients: ['claude']
"""


def test_adding_and_removing_a_project_keeps_the_users_comments(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    path = tmp_path / "inventory.yml"
    path.write_text(COMMENTED.replace("FIRST", str(first)))
    original = path.read_bytes()

    inventory = add_project(Project(slug="second", workspace=str(second), clients=["cursor"]), path)
    text = path.read_text()
    assert [project.slug for _, project in inventory.projects] == ["first", "second"]
    for kept in ("# My machines. Keep this comment.", "# the login", "# every project on this laptop"):
        assert kept in text
    assert '-   slug: "first"  # the original' in text, "quoting and the sequence's indent kept"
    assert "clients: ['claude']" in text and "    hosts:\n        localhost:" in text

    remove_project("second", path)
    assert path.read_bytes() == original


def test_a_new_registry_starts_with_its_header(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    path = tmp_path / "config" / "inventory.yml"
    add_project(Project(slug="app", workspace=str(workspace)), path)
    text = path.read_text()
    assert text.startswith("# memctl's projects on this machine")
    assert "      memctl_projects:\n      - slug: app\n" in text, "PyYAML's style, as before"
    assert path.stat().st_mode & 0o777 == 0o600
    remove_project("app", path)
    after = path.read_text()
    assert after.startswith("# memctl's projects") and "memctl_projects: []" in after
