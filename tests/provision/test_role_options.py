"""The roles' options are declared once (memctl.provision._role_options) and everything else agrees:
the generated argument specs, every option's default, and the roles' defaults/main.yml."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memctl.api.project import Project
from memctl.provision._role_options import ROLES, ClientConfig, RoleOptions

from .. import yamlfiles

REPO = Path(__file__).resolve().parents[2]


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _yaml(path: Path) -> Any:
    return yamlfiles.load(path.read_text(encoding="utf-8"))


def test_every_role_has_an_options_model() -> None:
    assert sorted(role.ROLE for role in ROLES) == sorted(p.name for p in (REPO / "roles").iterdir())


def test_checked_in_argument_specs_are_the_generated_ones() -> None:
    generate = _script("gen_argument_specs")
    for role in ROLES:
        path = REPO / "roles" / role.ROLE / "meta" / "argument_specs.yml"
        assert path.read_text(encoding="utf-8") == generate.render(role), (
            f"{path} is stale: run uv run python scripts/gen_argument_specs.py"
        )
    assert generate.main(check=True) == 0


@pytest.mark.parametrize("role", sorted(p.name for p in (REPO / "roles").iterdir()))
def test_every_role_option_declares_its_default_or_is_required(role: str) -> None:
    specs = _yaml(REPO / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"]
    for entry, body in specs.items():
        for name, option in body["options"].items():
            assert ("default" in option) != bool(option.get("required")), f"{role}/{entry}: {name}"
            assert option["description"], f"{role}/{entry}: {name} has no description"


@pytest.mark.parametrize("role", ROLES, ids=lambda role: role.ROLE)
def test_role_defaults_agree_with_the_declared_defaults(role: type[RoleOptions]) -> None:
    defaults = _yaml(REPO / "roles" / role.ROLE / "defaults" / "main.yml") or {}
    fields = role.model_fields
    assert set(defaults) <= set(fields), (
        f"undeclared in memctl.provision._role_options: {set(defaults) - set(fields)}"
    )
    generate = _script("gen_argument_specs")
    for name, field in fields.items():
        spec = generate.option_spec(field)
        if "default" in spec:
            assert name in defaults, f"{role.ROLE}: {name} is missing from defaults/main.yml"
            assert defaults[name] == spec["default"], f"{role.ROLE}: {name}"
    declared = {option for entry in role.ENTRY_POINTS.values() for option in entry.options}
    assert declared == set(fields), f"options no entry point reads: {set(fields) - declared}"


def test_client_options_carry_the_project_models_defaults() -> None:
    fields = ClientConfig.model_fields
    assert fields["client_config_clients"].default == Project.model_fields["clients"].default
    assert fields["client_config_codex_config"].default == Project.model_fields["codex_config"].default
    assert fields["client_config_hooks"].default == Project.model_fields["hooks"].default
