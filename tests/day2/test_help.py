"""Every day-2 command documents itself, with an example."""

from __future__ import annotations

import pytest

from .conftest import memctl


@pytest.mark.parametrize(
    "command",
    [["backup"], ["restore"], ["migrate"], ["audit"], ["token", "rotate"], ["upgrade"], ["status"], ["logs"]],
)
def test_help_has_an_example(command: list[str]) -> None:
    result = memctl(*command, "--help")
    assert result.code == 0
    assert "Example:" in result.stdout and "--json" in result.stdout
