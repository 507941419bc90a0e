"""`memctl projects` keeps this machine's inventory; `memctl doctor` says what is wrong and what to do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memctl.cli import cli

from .helpers import up_json


def _run(args: list[str], env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, [*args, "--json"], env=env, catch_exceptions=False)
    return result.exit_code, json.loads(result.output)


@pytest.fixture
def registry(tmp_path: Path) -> dict[str, str]:
    return {"MEMCTL_INVENTORY": str(tmp_path / "config" / "inventory.yml")}


def test_projects_add_list_remove(tmp_path: Path, registry: dict[str, str]) -> None:
    app = tmp_path / "My App"
    app.mkdir()
    code, added = _run(["projects", "add", str(app), "--client", "claude"], registry)
    assert code == 0 and added["project"]["slug"] == "my-app"
    code, listed = _run(["projects", "list"], registry)
    assert [(p["slug"], p["workspace"], p["clients"], p["provisioned"]) for p in listed["projects"]] == [
        ("my-app", str(app), ["claude"], False)
    ]
    # The same slug for another directory is refused, and the registry is unchanged.
    other = tmp_path / "other"
    other.mkdir()
    before = Path(registry["MEMCTL_INVENTORY"]).read_bytes()
    code, refused = _run(["projects", "add", str(other), "--slug", "my-app"], registry)
    assert code == 2 and "already names" in refused["message"]
    code, refused = _run(["projects", "add", str(other), "--slug", "Bad Slug!"], registry)
    assert code == 2 and "slug" in refused["message"]
    assert Path(registry["MEMCTL_INVENTORY"]).read_bytes() == before
    code, removed = _run(["projects", "remove", "my-app"], registry)
    assert code == 0 and removed["removed"]["workspace"] == str(app)
    code, missing = _run(["projects", "remove", "my-app"], registry)
    assert code == 3 and "no project 'my-app'" in missing["message"]


def test_up_all_provisions_the_registered_projects(tmp_path: Path, registry: dict[str, str]) -> None:
    code, empty = _run(["up", "--all"], registry)
    assert code == 3 and "memctl projects add" in empty["message"]
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        assert _run(["projects", "add", str(tmp_path / name), "--client", "cursor"], registry)[0] == 0
    report = up_json("--all", state=tmp_path / "state", env=registry)
    assert sorted(p["slug"] for p in report["projects"]) == ["one", "two"]
    assert (tmp_path / "two" / ".cursor" / "mcp.json").exists()
    code, listed = _run(["projects", "list"], registry)
    assert all(p["provisioned"] for p in listed["projects"])


def test_doctor_names_each_problem_and_its_fix(tmp_path: Path, registry: dict[str, str]) -> None:
    code, report = _run(["doctor", "--project", str(tmp_path)], registry)
    checks = {c["name"]: c for c in report["checks"]}
    assert code == 1 and checks["project"]["status"] == "fail"
    assert checks["project"]["fix"] == "run: memctl up"
    assert checks["ansible"]["status"] == "ok" and checks["embedding model"]["status"] == "ok"

    up_json("--project", str(tmp_path), "--client", "claude", state=tmp_path / "state")
    code, report = _run(["doctor", "--project", str(tmp_path)], registry)
    assert code == 0, report
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses["entry store"] == statuses["knowledge store"] == statuses["client configs"] == "ok"
    assert statuses["vector index"] == "ok"  # a small store: exact search, no index file

    token = tmp_path / ".memory" / "bridge.token"
    token.chmod(0o644)
    (tmp_path / ".mcp.json").write_text("{}")
    code, report = _run(["doctor", "--project", str(tmp_path)], registry)
    checks = {c["name"]: c for c in report["checks"]}
    assert code == 1
    assert checks["bridge token"]["fix"] == f"chmod 600 {token}"
    assert checks["client configs"]["status"] == "warn" and ".mcp.json" in checks["client configs"]["detail"]

    (tmp_path / ".memory" / "config.toml").write_text('entry_store = "valkey://127.0.0.1:1/0"\n')
    code, report = _run(["doctor", "--project", str(tmp_path)], registry)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["entry store"]["status"] == "fail" and "127.0.0.1:1" in checks["entry store"]["detail"]


def test_init_writes_settings_that_load_and_registers_the_project(
    tmp_path: Path, registry: dict[str, str]
) -> None:
    import tomllib

    from memory_bridge import load_settings

    app = tmp_path / "app"
    code, report = _run(["init", "--project", str(app), "--entry-store", "sqlite:///tmp/x.db"], registry)
    assert code == 0 and report["config"]["action"] == "created"
    config = app / ".memory" / "config.toml"
    assert tomllib.loads(config.read_text()) == {"entry_store": "sqlite:///tmp/x.db"}
    uncommented = config.read_text().replace("# ", "", 1)
    assert "dify_api_key =" not in uncommented, "no secret settings in the template"
    settings_text = "\n".join(
        line.removeprefix("# ") for line in config.read_text().splitlines() if " = " in line
    )
    assert tomllib.loads(settings_text)["slots"] == list(load_settings(project=app).stores.slots)
    assert load_settings(project=app).stores.entry_store == "sqlite:///tmp/x.db"
    code, listed = _run(["projects", "list"], registry)
    assert [p["slug"] for p in listed["projects"]] == ["app"]

    config.write_text('entry_store = "sqlite"\n')
    code, again = _run(["init", "--project", str(app)], registry)
    assert code == 0 and again["config"]["action"] == "kept"
    assert config.read_text() == 'entry_store = "sqlite"\n'

    code, bad = _run(["init", "--project", str(tmp_path / "other"), "--entry-store", "mongodb://x"], registry)
    assert code == 2 and "mongodb" in bad["message"] and not (tmp_path / "other").exists()
