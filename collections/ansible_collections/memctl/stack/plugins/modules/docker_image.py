"""Ansible module: build a Docker image from chosen files, only when they changed."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.memctl.stack.plugins.module_utils.docker import HASH_LABEL, DockerCLI, fingerprint

DOCUMENTATION = r"""
module: docker_image
short_description: Build a local Docker image when its inputs changed
description:
  - Builds I(name) from a Dockerfile and the files of I(context) listed in I(include), with the
    Docker CLI. The build sees only those files (they are staged in a temporary directory).
  - The inputs (the files' contents and modes, the Dockerfile, the build arguments and the ID of
    I(base_image) when that image exists locally) are hashed into a label on the image; the image
    is rebuilt only when that hash differs, so a re-run reports C(changed=false).
  - Check mode reports whether a build would happen and builds nothing. Diff shows the input
    hash and the build argument names (never their values).
options:
  name:
    description: Image reference to build, with its tag (e.g. C(memctl-bridge:0.1.0)).
    type: str
    required: true
  context:
    description: Directory the included paths are relative to.
    type: path
    required: true
  include:
    description: Files and directories (relative to I(context)) the build may see.
    type: list
    elements: str
    required: true
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
"""

RETURN = r"""
image_id:
  description: ID of the image (empty in check mode when it would be built).
  returned: always
  type: str
fingerprint:
  description: Hash of the build inputs, kept in the image's io.memctl.spec-hash label.
  returned: always
  type: str
built:
  description: Whether a build ran (or, in check mode, would run).
  returned: always
  type: bool
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


def run(module: AnsibleModule) -> dict[str, Any]:
    """Build the image if its inputs changed (or say so in check mode)."""
    params = module.params
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
            "name": {"type": "str", "required": True},
            "context": {"type": "path", "required": True},
            "include": {"type": "list", "elements": "str", "required": True},
            "dockerfile": {"type": "str", "default": "Dockerfile"},
            "files": {"type": "dict", "default": {}},
            "base_image": {"type": "str"},
            "build_args": {"type": "dict", "default": {}, "no_log": False},
            "network": {"type": "str"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
