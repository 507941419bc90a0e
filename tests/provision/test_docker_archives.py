"""The docker role's image archives (docker_image_archives): one the control node lacks, or
that names no image, fails saying so before anything reaches the machine. Loading one into
a machine's engine is tested on an SSH machine (tests/fleet)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from .. import yamlfiles
from .helpers import ansible_playbook

REPO = Path(__file__).resolve().parents[2]


def _archive(path: Path, manifest: object | None) -> Path:
    """A tar as `docker save` writes one, with this manifest.json (none: no manifest)."""
    with tarfile.open(path, "w") as tar:
        if manifest is not None:
            data = json.dumps(manifest).encode()
            info = tarfile.TarInfo("manifest.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ("absent", "is not a file on the control node"),
        (None, "holds no tagged image: write it with `docker save NAME:TAG`"),
        ([{"Config": "c.json", "RepoTags": None, "Layers": []}], "holds no tagged image"),
    ],
)
def test_an_archive_that_cannot_be_loaded_fails_naming_it(
    tmp_path: Path, manifest: object | None, message: str
) -> None:
    archive = tmp_path / "images.tar"
    if manifest != "absent":
        _archive(archive, manifest)
    playbook = tmp_path / "load.yml"
    task = {"ansible.builtin.include_role": {"name": "docker", "tasks_from": "archive"}}
    playbook.write_text(yamlfiles.dump([{"hosts": "localhost", "gather_facts": False, "tasks": [task]}]))
    extra = json.dumps({"docker_archive": str(archive)})
    run = ansible_playbook("-i", "localhost,", "-c", "local", "-e", extra, str(playbook), timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"{archive} {message}" in run.stdout, run.stdout
