"""The wheel alone carries what the bridge image is built from: `pip install memctl`, then
`memctl up` in stack mode builds the image without a checkout (issue 17)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from .. import yamlfiles
from ..wheels import build_wheel, install_wheel


@pytest.fixture(scope="module")
def content(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """memctl/_ansible of the wheel installed in a fresh venv: the bridge role's build context."""
    wheel = build_wheel(tmp_path_factory.mktemp("dist"))
    site = install_wheel(wheel, tmp_path_factory.mktemp("venv"), deps=False)
    return site / "memctl" / "_ansible"


def _copy_sources(dockerfile: str) -> list[str]:
    """The context paths the Dockerfile's COPY instructions read (not those from another stage)."""
    sources = []
    for line in re.sub(r"\\\n", " ", dockerfile).splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            sources += [w for w in words[1:-1] if not w.startswith("--")]
    return sources


def test_the_bridge_roles_build_context_is_complete_in_an_installed_wheel(content: Path) -> None:
    defaults = yamlfiles.load((content / "roles" / "bridge" / "defaults" / "main.yml").read_text())
    # memctl_install's content directory on a remote machine, else roles/bridge/../.., _ansible
    assert defaults["bridge_source_dir"] == "{{ memctl_install_content_dir | default(role_path ~ '/../..') }}"
    for entry in defaults["bridge_build_include"]:
        assert (content / entry).exists(), f"{entry} is missing from the installed wheel"
    dockerfile = (content / "bridge" / "Dockerfile").read_text()
    sources = _copy_sources(dockerfile)
    assert "uv.lock" in sources and "bridge/" in sources
    for source in sources:
        if "[" in source:  # an optional file (build-ca.pem, given by the role when set)
            continue
        assert (content / source).exists(), f"COPY {source}: not in the installed wheel"
        assert any(
            fnmatch.fnmatch(source.rstrip("/"), entry) or source.startswith(entry)
            for entry in defaults["bridge_build_include"] + ["bridge/Dockerfile"]
        ), f"COPY {source}: the role does not put it in the build context"
    # the project the image builds is this very wheel: the same version, packages and content
    project = (content / "pyproject.toml").read_text()
    assert 'packages = ["bridge/memory_bridge", "ctl/memctl"]' in project
    assert (content / "bridge" / "memory_bridge" / "__init__.py").is_file()
    assert (content / "ctl" / "memctl" / "cli.py").read_bytes() == (content.parent / "cli.py").read_bytes()
    assert not list(content.rglob("__pycache__")), "the wheel carries no byte code of its sources"
