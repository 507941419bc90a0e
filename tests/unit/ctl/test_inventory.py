"""Unit test of `memctl.provision._inventory`'s workspace rule: never `/` or a home directory."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memctl.api.project import Project


@pytest.mark.parametrize("workspace", ["/", "//", "~", "~/"])
def test_a_project_never_has_the_root_or_a_home_as_its_workspace(workspace: str) -> None:
    with pytest.raises(ValidationError, match="project's own directory"):
        Project(slug="app", workspace=workspace)


def test_a_project_directory_is_a_workspace() -> None:
    assert Project(slug="app", workspace="~/src/app").workspace == "~/src/app"
