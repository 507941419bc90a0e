"""The pure parts of memctl.stack's Docker modules: what a build sees, when it reruns, what runs,
what an exec and a probe report, and what they refuse before reaching an engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.memctl.stack.plugins.module_utils.compose import events
from ansible_collections.memctl.stack.plugins.modules.docker_compose import run as compose_run
from ansible_collections.memctl.stack.plugins.modules.docker_container import SpecError, create_kwargs
from ansible_collections.memctl.stack.plugins.modules.docker_exec import (
    exec_result,
    failure_message,
    not_running_message,
)
from ansible_collections.memctl.stack.plugins.modules.docker_exec import run as exec_run
from ansible_collections.memctl.stack.plugins.modules.docker_image import (
    archive_report,
    context_sources,
    included_files,
    inputs_hash,
)
from ansible_collections.memctl.stack.plugins.modules.docker_image import run as image_run
from ansible_collections.memctl.stack.plugins.modules.docker_info import container_facts, split_images


@pytest.fixture
def context(tmp_path: Path) -> Path:
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "mod.pyc").write_bytes(b"\0")
    (tmp_path / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "secret.env").write_text("not for the build\n")
    return tmp_path


def test_the_build_sees_only_included_files_without_bytecode(context: Path) -> None:
    files = included_files(context, ["pyproject.toml", "pkg"])
    assert files == [Path("pkg/mod.py"), Path("pyproject.toml")]


def test_a_missing_include_is_named(context: Path) -> None:
    with pytest.raises(FileNotFoundError, match="include: docs is not in"):
        included_files(context, ["docs"])


def _hash(context: Path, args: dict[str, str] | None = None, extra: dict[str, str] | None = None) -> str:
    files = included_files(context, ["pyproject.toml", "pkg"])
    return inputs_hash(context_sources(context, files, "Dockerfile", extra or {}), args or {}, "base-id")


def test_the_hash_follows_contents_modes_args_and_extra_files(
    context: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    first = _hash(context)
    assert _hash(context) == first
    (context / "secret.env").write_text("changed, but not included\n")
    assert _hash(context) == first
    (context / "pkg" / "mod.py").write_text("x = 2\n")
    changed = _hash(context)
    assert changed != first
    (context / "pkg" / "mod.py").chmod(0o755)
    assert _hash(context) != changed
    assert _hash(context, args={"A": "1"}) != _hash(context)
    ca = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.write_text("cert\n")
    assert _hash(context, extra={"bridge/build-ca.pem": str(ca)}) != _hash(context)


def test_a_container_spec_becomes_docker_sdk_arguments() -> None:
    spec = {
        "image": "memctl-bridge:local",
        "command": ["--log-level", "INFO"],
        "env": {"MEMCTL_PROJECT": "/w"},
        "mounts": ["/w:/w:ro"],
        "published": ["127.0.0.1:3107:3106", "[::1]:3107:3106/udp"],
        "networks": ["memctl", "other"],
        "user": "1000:1000",
        "restart": "unless-stopped",
        "healthcheck": None,
    }
    kwargs = create_kwargs(spec, "memctl-bridge-app", "abc")
    assert kwargs == {
        "image": "memctl-bridge:local",
        "command": ["--log-level", "INFO"],
        "name": "memctl-bridge-app",
        "detach": True,
        "restart_policy": {"Name": "unless-stopped"},
        "labels": {"io.memctl.spec-hash": "abc", "io.memctl.spec": json.dumps(spec, sort_keys=True)},
        "environment": {"MEMCTL_PROJECT": "/w"},
        "volumes": ["/w:/w:ro"],
        "ports": {"3106/tcp": ("127.0.0.1", 3107), "3106/udp": ("::1", 3107)},
        "network": "memctl",  # further networks are connected after creation
        "user": "1000:1000",
    }
    checked = create_kwargs({**spec, "healthcheck": "true", "restart": "on-failure:3"}, "c", "abc")
    assert checked["healthcheck"] == {"test": ["CMD-SHELL", "true"], "interval": 5e9, "start_period": 30e9}
    assert checked["restart_policy"] == {"Name": "on-failure", "MaximumRetryCount": 3}


@pytest.mark.parametrize("published", ["3107:3106", "127.0.0.1:x:3106", "3106"])
def test_a_published_port_of_another_form_is_refused(published: str) -> None:
    spec = {"image": "i", "command": [], "env": {}, "mounts": [], "published": [published]}
    spec |= {"networks": [], "user": None, "restart": "no", "healthcheck": None}
    with pytest.raises(SpecError, match="HOST_IP:HOST_PORT:CONTAINER_PORT"):
        create_kwargs(spec, "c", "abc")


class _Module:
    """What the modules use of an AnsibleModule, for the paths that never reach an engine."""

    def __init__(self, check_mode: bool = False, **params: object) -> None:
        self.params = params
        self.check_mode = check_mode

    def fail_json(self, **result: object) -> None:
        raise _Failed(str(result["msg"]))


class _Failed(Exception):
    pass


def test_a_container_is_reported_as_running_stopped_or_absent() -> None:
    running = {"Id": "c1", "State": {"Running": True, "Status": "running"}}
    assert container_facts(running) == {"exists": True, "running": True, "status": "running", "id": "c1"}
    stopped = {"Id": "c2", "State": {"Running": False, "Status": "exited"}}
    assert container_facts(stopped) == {"exists": True, "running": False, "status": "exited", "id": "c2"}
    assert container_facts(None) == {"exists": False, "running": False, "status": "absent", "id": ""}


def test_images_are_split_into_present_and_missing_in_the_order_given() -> None:
    images = ["b:1", "a:1", "c:2"]
    assert split_images(images, {"a:1", "other:9"}) == (["a:1"], ["b:1", "c:2"])
    assert split_images([], set()) == ([], [])


def test_an_exec_result_reads_like_ansible_command_output() -> None:
    result = exec_result(["valkey-cli", "DBSIZE"], 0, (b"5\n", None))
    assert result == {
        "changed": True,
        "cmd": ["valkey-cli", "DBSIZE"],
        "rc": 0,
        "stdout": "5",
        "stdout_lines": ["5"],
        "stderr": "",
    }
    assert exec_result(["x"], 0, (None, None))["stdout_lines"] == []
    assert exec_result(["x"], 0, (b"\xff\n", b""))["stdout"] == "\ufffd"


def test_a_failed_exec_names_the_program_the_container_and_its_last_lines() -> None:
    lines = "".join(f"line {n}\n" for n in range(30)).encode()
    result = exec_result(["valkey-cli", "EVAL", "a long script"], 1, (b"ignored\n", lines))
    message = failure_message("memctl-valkey", result)
    assert message.startswith("valkey-cli exited 1 in container memctl-valkey:\nline 10\n")
    assert message.endswith("line 29") and "a long script" not in message
    silent = failure_message("c", exec_result(["true"], 2, (None, None)))
    assert silent == "true exited 2 in container c (it printed nothing)"
    assert failure_message("c", exec_result(["x"], 1, (b"on stdout\n", None))).endswith(":\non stdout")


def test_a_container_that_cannot_run_a_command_says_what_to_do() -> None:
    assert not_running_message("v", None) == "there is no container v on this machine: create it first"
    assert not_running_message("v", "exited") == "container v is exited, not running: start it first"


def test_check_mode_runs_no_command_and_needs_no_engine() -> None:
    result = exec_run(_Module(check_mode=True, container="v", argv=["valkey-cli", "FLUSHALL"]))
    assert result["skipped"] is True and result["changed"] is False
    assert result["cmd"] == ["valkey-cli", "FLUSHALL"] and "check_mode: false" in result["msg"]
    with pytest.raises(_Failed, match="argv: give the program"):
        exec_run(_Module(container="v", argv=[]))


def test_an_archive_report_is_changed_only_when_an_image_was_missing() -> None:
    images = ["debian:bookworm-slim", "valkey/valkey:8.1.4"]
    assert archive_report(images, [], []) == {
        "changed": False,
        "missing": [],
        "loaded": [],
        "diff": {"before": {"images": images}, "after": {"images": images}},
    }
    loaded = archive_report(images, ["valkey/valkey:8.1.4"], ["valkey/valkey:8.1.4", "debian:bookworm-slim"])
    assert loaded["changed"] is True and loaded["missing"] == ["valkey/valkey:8.1.4"]
    assert loaded["loaded"] == ["debian:bookworm-slim", "valkey/valkey:8.1.4"]
    assert loaded["diff"]["before"] == {"images": ["debian:bookworm-slim"]}


def test_an_archive_without_its_image_names_or_a_build_without_its_inputs_is_refused() -> None:
    with pytest.raises(_Failed, match=r"images: name the images /a\.tar holds"):
        image_run(_Module(archive="/a.tar", images=[], name=None, context=None, include=None))
    with pytest.raises(_Failed, match="name, context and include are required to build"):
        image_run(_Module(archive=None, images=[], name="x:1", context=None, include=None))


def test_composes_events_name_what_changed_and_skip_what_already_runs() -> None:
    stderr = (
        " DRY-RUN MODE -  Container dify-api-1  Recreate\n"
        " DRY-RUN MODE -  Container dify-api-1  Recreated\n"
        " DRY-RUN MODE -  Container dify-nginx-1  Running\n"
        " Network dify_default  Created\n"
        'WARN[0000] The "X" variable is not set. Defaulting to a blank string.\n'
    )
    assert events(stderr) == [
        "Container dify-api-1 Recreate",
        "Container dify-api-1 Recreated",
        "Network dify_default Created",
    ]
    assert events(" DRY-RUN MODE -  Container dify-api-1  Running\n") == []


def test_a_compose_state_without_a_project_or_with_a_missing_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(_Failed, match="state=present needs project_src"):
        compose_run(_Module(project_src=None, state="present"))
    with pytest.raises(_Failed, match=f"project_src: {tmp_path / 'none'} is not a directory"):
        compose_run(_Module(project_src=str(tmp_path / "none"), state=None))
