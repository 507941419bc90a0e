"""Ansible module: build a Docker image from chosen files, only when they changed; or load
an image archive, only when the engine lacks one of its images."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.docker import (
    HASH_LABEL,
    DockerCLI,
    docker_client,
    fingerprint,
)

DOCUMENTATION = r"""
module: docker_image
short_description: Build a local Docker image when its inputs changed, or load an image archive
description:
  - With I(name), builds I(name) from a Dockerfile and the files of I(context) listed in I(include), with the
    Docker CLI. The build sees only those files (they are staged in a temporary directory).
  - The inputs (the files' contents and modes, the Dockerfile, the build arguments and the ID of
    I(base_image) when that image exists locally) are hashed into a label on the image; the image
    is rebuilt only when that hash differs, so a re-run reports C(changed=false).
  - Check mode reports whether a build would happen and builds nothing. Diff shows the input
    hash and the build argument names (never their values).
  - With I(archive), loads that archive (as C(docker save) writes it, a file on the machine
    the module runs on) into the engine through the Docker SDK, only when the engine lacks one
    of I(images); a re-run therefore reports C(changed=false). An archive that, once loaded,
    still leaves one of I(images) missing fails the task. Check mode reports whether it would
    load and loads nothing (the archive need not be there yet); diff shows the images the
    engine has before and after.
options:
  name:
    description:
      - Image reference to build, with its tag (e.g. C(memctl-bridge:0.1.0)).
      - Required, with I(context) and I(include), unless I(archive) is given.
    type: str
  context:
    description: Directory the included paths are relative to.
    type: path
  include:
    description: Files and directories (relative to I(context)) the build may see.
    type: list
    elements: str
  archive:
    description: An image archive on the machine, loaded when the engine lacks one of I(images).
    type: path
  images:
    description: The image references (C(NAME:TAG)) that I(archive) holds; required with I(archive).
    type: list
    elements: str
    default: []
  dockerfile:
    description: The Dockerfile, relative to I(context).
    type: str
    default: Dockerfile
  files:
    description:
      - Further files placed in the build context, mapping a path in the context to a file on
        the machine (e.g. certificates the build should trust). Their contents enter the hash.
    type: dict
    default: {}
  base_image:
    description: Passed as the C(BASE_IMAGE) build argument; its local image ID enters the hash.
    type: str
  build_args:
    description: Further build arguments. Their values never appear in the output.
    type: dict
    default: {}
  network:
    description: Network for the build's C(RUN) steps (e.g. C(host)); default Docker's.
    type: str
author: memctl
"""

EXAMPLES = r"""
- name: Build the bridge image
  memctl.stack.docker_image:
    name: memctl-bridge:0.1.0
    context: /opt/memctl/src
    dockerfile: bridge/Dockerfile
    include: [pyproject.toml, uv.lock, README.md, bridge, ctl]
    base_image: python:3.11-slim

- name: Load the images a machine cannot pull
  memctl.stack.docker_image:
    archive: /var/lib/memctl/images/stack.tar
    images: [debian:bookworm-slim, valkey/valkey:8.1.4]
"""

RETURN = r"""
image_id:
  description: ID of the image (empty in check mode when it would be built).
  returned: when building
  type: str
fingerprint:
  description: Hash of the build inputs, kept in the image's io.memctl.spec-hash label.
  returned: when building
  type: str
built:
  description: Whether a build ran (or, in check mode, would run).
  returned: when building
  type: bool
missing:
  description: The references of I(images) the engine lacked before this run.
  returned: when loading an archive
  type: list
  elements: str
loaded:
  description: The image tags the archive loaded (empty when nothing was loaded, and in check mode).
  returned: when loading an archive
  type: list
  elements: str
"""


_SKIPPED_DIRS = {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
_SKIPPED_SUFFIXES = (".pyc", ".pyo")


def included_files(context: Path, include: list[str]) -> list[Path]:
    """Every file the build sees, relative to the context, in a stable order."""
    found: list[Path] = []
    for entry in include:
        path = context / entry
        if path.is_file():
            found.append(Path(entry))
        elif path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
                found += [
                    (Path(root) / name).relative_to(context)
                    for name in files
                    if not name.endswith(_SKIPPED_SUFFIXES)
                ]
        else:
            raise FileNotFoundError(f"include: {entry} is not in {context}")
    return sorted(set(found))


def context_sources(
    context: Path, files: list[Path], dockerfile: str, extra: dict[str, str]
) -> dict[str, Path]:
    """Each path of the staged build context and the file it comes from."""
    sources = {str(relative): context / relative for relative in [*files, Path(dockerfile)]}
    sources.update({str(Path(target)): Path(source) for target, source in extra.items()})
    return dict(sorted(sources.items()))


def inputs_hash(sources: dict[str, Path], args: dict[str, str], base: str) -> str:
    """The hash that decides whether the image must be built again."""
    digests = [
        [target, os.access(path, os.X_OK), hashlib.sha256(path.read_bytes()).hexdigest()]
        for target, path in sources.items()
    ]
    return fingerprint({"files": digests, "args": args, "base": base})


def build(
    docker: DockerCLI, params: dict[str, Any], sources: dict[str, Path], args: dict[str, str], fp: str
) -> None:
    """Stage the build context and run `docker build`."""
    with tempfile.TemporaryDirectory(prefix="memctl-build-") as staged:
        for relative, source in sources.items():
            target = Path(staged) / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        command = ["build", "--quiet", "-t", params["name"], "--label", f"{HASH_LABEL}={fp}"]
        command += ["-f", str(Path(staged) / params["dockerfile"])]
        if params["network"]:
            command += ["--network", params["network"]]
        for key, value in sorted(args.items()):
            command += ["--build-arg", f"{key}={value}"]
        rc, out, err = docker.run(*command, staged, check=False)
        if rc != 0:
            tail = "\n".join((err or out).strip().splitlines()[-25:])
            docker.module.fail_json(msg=f"building {params['name']} failed:\n{tail}", rc=rc)


def archive_report(images: list[str], missing: list[str], loaded: list[str]) -> dict[str, Any]:
    """The result of an archive run: `missing` before it, the tags `loaded` by it."""
    present = [ref for ref in images if ref not in missing]
    return {
        "changed": bool(missing),
        "missing": missing,
        "loaded": sorted(loaded),
        "diff": {"before": {"images": present}, "after": {"images": list(images)}},
    }


def _image_missing(client: Any, images: list[str]) -> list[str]:
    """The references of `images` the engine lacks, in the order given."""
    from docker.errors import ImageNotFound

    missing = []
    for ref in images:
        try:
            client.images.get(ref)
        except ImageNotFound:
            missing.append(ref)
    return missing


def load_archive(module: AnsibleModule) -> dict[str, Any]:
    """Load the archive when the engine lacks one of its images (or say so in check mode)."""
    from docker.errors import APIError, ImageLoadError

    archive, images = module.params["archive"], list(module.params["images"])
    if not images:
        module.fail_json(msg=f"images: name the images {archive} holds (its manifest's RepoTags)")
    try:
        with closing(docker_client(module)) as client:
            missing = _image_missing(client, images)
            if not missing or module.check_mode:
                return archive_report(images, missing, [])
            if not Path(archive).is_file():
                module.fail_json(msg=f"archive: {archive} is not a file on this machine: copy it there first")
            with Path(archive).open("rb") as data:
                loaded = [str(tag) for image in client.images.load(data) for tag in image.tags]
            still = _image_missing(client, images)
    except (APIError, ImageLoadError) as exc:
        module.fail_json(
            msg=f"loading {archive} failed ({getattr(exc, 'explanation', None) or exc}): "
            "write it with `docker save NAME:TAG`"
        )
        raise
    if still:
        module.fail_json(
            msg=f"{archive} was loaded but the engine still lacks {', '.join(still)}: "
            "write the archive with `docker save` of those images"
        )
    return archive_report(images, missing, loaded)


def run(module: AnsibleModule) -> dict[str, Any]:
    """Load the archive, or build the image if its inputs changed (or say so in check mode)."""
    params = module.params
    if params.get("archive"):
        return load_archive(module)
    if not (params["name"] and params["context"] and params["include"]):
        module.fail_json(msg="name, context and include are required to build (or give archive and images)")
    docker = DockerCLI(module)
    context = Path(params["context"])
    args = {key: str(value) for key, value in params["build_args"].items()}
    base_id = ""
    if params["base_image"]:
        args["BASE_IMAGE"] = params["base_image"]
        base = docker.inspect("image", params["base_image"])
        base_id = str(base["Id"]) if base else ""
    try:
        files = included_files(context, params["include"])
    except FileNotFoundError as exc:
        module.fail_json(msg=str(exc))
    if not (context / params["dockerfile"]).is_file():
        module.fail_json(msg=f"dockerfile: {params['dockerfile']} is not in {context}")
    missing = [source for source in params["files"].values() if not Path(source).is_file()]
    if missing:
        module.fail_json(msg=f"files: {', '.join(missing)} not found")
    sources = context_sources(context, files, params["dockerfile"], params["files"])
    fp = inputs_hash(sources, args, base_id)
    existing = docker.inspect("image", params["name"])
    labels = ((existing or {}).get("Config") or {}).get("Labels") or {}
    current = str(labels.get(HASH_LABEL, ""))
    result: dict[str, Any] = {"fingerprint": fp, "built": current != fp, "changed": current != fp}
    result["diff"] = {
        "before": {"image": params["name"], "fingerprint": current or "(no image)"},
        "after": {"image": params["name"], "fingerprint": fp, "build_args": sorted(args)},
    }
    if current != fp and not module.check_mode:
        build(docker, params, sources, args, fp)
        existing = docker.inspect("image", params["name"])
    result["image_id"] = str(existing["Id"]) if existing and (current == fp or not module.check_mode) else ""
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str"},
            "context": {"type": "path"},
            "include": {"type": "list", "elements": "str"},
            "archive": {"type": "path"},
            "images": {"type": "list", "elements": "str", "default": []},
            "dockerfile": {"type": "str", "default": "Dockerfile"},
            "files": {"type": "dict", "default": {}},
            "base_image": {"type": "str"},
            "build_args": {"type": "dict", "default": {}, "no_log": False},
            "network": {"type": "str"},
        },
        mutually_exclusive=[("archive", "name"), ("archive", "context")],
        required_one_of=[("archive", "name")],
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
