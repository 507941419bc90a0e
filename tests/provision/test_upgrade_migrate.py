"""`memctl upgrade` and `memctl migrate --inventory` on embedded projects (the playbooks run for real)."""

from __future__ import annotations

import json
from pathlib import Path

from memory_bridge.stores.sqlite import SCHEMA_VERSION

from ..day2.test_migrate import old_entry_store, user_version
from .helpers import memctl, up_json, write_inventory


def test_upgrading_a_provisioned_project_to_what_it_runs_changes_nothing(tmp_path: Path) -> None:
    workspace = tmp_path / "app"
    workspace.mkdir()
    state = tmp_path / "state"
    assert up_json("--project", str(workspace), state=state)["changed"] > 0

    check = memctl("upgrade", "--project", str(workspace), "--check", "--json", state=state)
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["changed"] == 0

    run = memctl("upgrade", "--project", str(workspace), "--json", state=state)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["changed"] == 0 and report["containers"] == []
    [project] = report["projects"]
    assert project["smoke"]["saved"] == "already present"
    assert Path(report["log"]).name.endswith("-upgrade.log")


def test_migrate_over_an_inventory_migrates_every_project_once(tmp_path: Path) -> None:
    workspaces = [tmp_path / "one", tmp_path / "two"]
    for workspace in workspaces:
        workspace.mkdir()
    # The second project has an entry store of schema version 1, as an old memctl left it.
    old = old_entry_store(workspaces[1])
    inventory = write_inventory(
        tmp_path / "inventory.yml", [{"slug": w.name, "workspace": str(w)} for w in workspaces]
    )
    state = tmp_path / "state"

    dry = memctl("migrate", "--inventory", str(inventory), "--dry-run", "--json", state=state)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert json.loads(dry.stdout)["check"] is True
    assert user_version(old) == 1, "a dry run changes nothing"

    first = memctl("migrate", "--inventory", str(inventory), "--json", state=state)
    assert first.returncode == 0, first.stdout + first.stderr
    report = json.loads(first.stdout)
    assert sorted(p["slug"] for p in report["projects"]) == ["one", "two"]
    assert all(p["changed"] > 0 for p in report["projects"])
    for workspace in workspaces:
        applied = (workspace / ".memory" / "migrations.jsonl").read_text().splitlines()
        assert "entries-schema" in [json.loads(line)["name"] for line in applied]
    assert user_version(old) == SCHEMA_VERSION

    second = memctl("migrate", "--inventory", str(inventory), "--json", state=state)
    assert second.returncode == 0, second.stdout + second.stderr
    assert json.loads(second.stdout)["changed"] == 0


def test_migrate_of_one_project_still_runs_in_process(tmp_path: Path) -> None:
    run = memctl("migrate", "--project", str(tmp_path), "--json", state=tmp_path / "state")
    assert run.returncode == 0, run.stdout + run.stderr
    assert set(json.loads(run.stdout)) == {"ok", "dry_run", "changed", "applied", "pending"}
    assert not (tmp_path / "state" / "runs").exists(), "no playbook ran"
