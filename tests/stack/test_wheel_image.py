"""The bridge image built from an installed wheel's content, as the bridge role builds it there
(no checkout): `pip install memctl`, then `memctl up` in stack mode (issue 17)."""

from __future__ import annotations

import subprocess

import pytest

from ansible_collections.memctl.stack.plugins.modules.docker_image import run

from .. import yamlfiles
from ..wheels import build_wheel, install_wheel
from .conftest import RUN, CLIModule

pytestmark = [pytest.mark.docker]


def test_an_installed_wheel_builds_the_bridge_image(
    base_image: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    wheel = build_wheel(tmp_path_factory.mktemp("dist"))
    content = install_wheel(wheel, tmp_path_factory.mktemp("venv"), deps=False) / "memctl" / "_ansible"
    defaults = yamlfiles.load((content / "roles" / "bridge" / "defaults" / "main.yml").read_text())
    image = f"memctl-bridge:wheel-{RUN}"
    try:
        result = run(
            CLIModule(
                name=image,
                context=str(content),  # bridge_source_dir: roles/bridge/../..
                dockerfile="bridge/Dockerfile",
                include=defaults["bridge_build_include"],
                files={"bridge/build-ca.pem": "/etc/ssl/certs/ca-certificates.crt"},
                base_image=base_image,
                build_args={},
                network="host",
            )
        )
        assert result["built"] is True and result["image_id"]
        version = subprocess.run(
            ["docker", "run", "--rm", "--entrypoint", "memctl", image, "--version"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "0.1.0" in version.stdout
    finally:
        subprocess.run(["docker", "image", "rm", "--force", image], capture_output=True, check=False)
