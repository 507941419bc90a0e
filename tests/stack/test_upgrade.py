"""`memctl upgrade`, `status` and `logs` on the provisioned stack (the `stack` fixture's engine).

The new versions are local tags of the cached images, so no build runs: an upgrade moves
Valkey and both bridges to them, one container at a time, and a second upgrade changes nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import valkey

from .. import yamlfiles
from .conftest import BRIDGE_IMAGE, DIFY_PINNED, RUN, SLUGS, VALKEY, VALKEY_IMAGE, Stack

pytestmark = [pytest.mark.docker]

NEXT_VALKEY = f"{VALKEY_IMAGE}-next-{RUN}"
NEXT_BRIDGE = f"{BRIDGE_IMAGE}-next-{RUN}"
BRIDGES = [f"memctl-bridge-{slug}" for slug in SLUGS]


@dataclass
class Run:
    returncode: int
    payload: dict[str, Any]
    output: str


def memctl(stack: Stack, *args: str) -> Run:
    env = stack.env()
    result = subprocess.run(
        [sys.executable, "-m", "memctl", *args],
        cwd=stack.root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        payload = json.loads(result.stdout)
    except ValueError:
        payload = {}
    return Run(result.returncode, payload, result.stdout + result.stderr)


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout.strip()


def _container_ids() -> dict[str, str]:
    return {name: _docker("inspect", "--format", "{{.Id}}", name) for name in (VALKEY, *BRIDGES)}


def _set_versions(stack: Stack, **machine_vars: str) -> None:
    document = yamlfiles.load(stack.inventory.read_text())
    document["all"]["vars"].update(machine_vars)
    stack.inventory.write_text(yamlfiles.dump(document))


@contextmanager
def _recording_events(names: tuple[str, ...]) -> Iterator[list[tuple[str, str]]]:
    """(container, action) for the named containers while the block runs, in the engine's order.

    The events are streamed as they happen, into a file: asked for afterwards with `--since`,
    the engine replays only its last 256 events, which the health checks of a busy engine's
    containers turn over within a long upgrade; and it drops events for a subscriber that
    does not take them at once, as a full pipe would not.
    """
    events: list[tuple[str, str]] = []
    since = _docker("system", "info", "--format", "{{json .SystemTime}}").strip('"')
    filters = ["--filter", "type=container"]
    for name in names:
        filters += ["--filter", f"container={name}"]
    with tempfile.TemporaryFile("w+") as record:
        stream = subprocess.Popen(
            ["docker", "events", "--since", since, *filters, "--format", "{{json .}}"], stdout=record
        )
        try:
            yield events
            time.sleep(1)  # the engine sends an event a moment after it happens
        finally:
            stream.terminate()
            stream.wait(timeout=30)
        record.seek(0)
        for line in record:
            event = json.loads(line)
            name = event["Actor"]["Attributes"].get("name", "")
            if name in names:
                events.append((name, event["Action"]))


@dataclass
class Upgrades:
    containers_before: dict[str, str]
    refused: Run
    after_refusal: dict[str, str]
    dify_head_after_refusal: str
    upgrade: Run
    events: list[tuple[str, str]]
    probe_after: bytes | None
    containers_after: dict[str, str]
    again: Run
    containers_after_again: dict[str, str]


@pytest.fixture(scope="module")
def upgrades(stack: Stack) -> Iterator[Upgrades]:
    """An untested Dify refused; an upgrade to new image tags; the same upgrade again."""
    assert stack.runs["first"].returncode == 0, stack.runs["first"].output[-4000:]
    _docker("tag", VALKEY_IMAGE, NEXT_VALKEY)
    _docker("tag", BRIDGE_IMAGE, NEXT_BRIDGE)
    try:
        before = _container_ids()
        # 1.15.0 is a tag of the Dify repository, but not a release memctl has tested.
        _set_versions(stack, valkey_image=NEXT_VALKEY, dify_version="1.15.0")
        refused = memctl(stack, "upgrade", "--inventory", str(stack.inventory), "--json")
        after_refusal = _container_ids()
        head = subprocess.run(
            ["git", "describe", "--tags"], cwd=stack.dify_dir, capture_output=True, text=True, check=True
        ).stdout.strip()

        _set_versions(stack, valkey_image=NEXT_VALKEY, bridge_image=NEXT_BRIDGE, dify_version=DIFY_PINNED)
        store = valkey.Valkey(host="127.0.0.1", port=stack.valkey_port)
        store.set("memctl-upgrade-probe", "kept")
        with _recording_events((VALKEY, *BRIDGES)) as events:
            upgrade = memctl(stack, "upgrade", "--inventory", str(stack.inventory), "--json")
        probe = valkey.Valkey(host="127.0.0.1", port=stack.valkey_port).get("memctl-upgrade-probe")
        after = _container_ids()
        again = memctl(stack, "upgrade", "--inventory", str(stack.inventory), "--json")
        yield Upgrades(
            before, refused, after_refusal, head, upgrade, events, probe, after, again, _container_ids()
        )
    finally:
        subprocess.run(["docker", "rmi", NEXT_VALKEY, NEXT_BRIDGE], capture_output=True, check=False)


def test_an_untested_dify_release_is_refused_before_any_change(upgrades: Upgrades) -> None:
    refused = upgrades.refused
    assert refused.returncode == 6, refused.output[-3000:]
    assert refused.payload["ok"] is False
    message = refused.payload["message"]
    assert "dify_version 1.15.0 is not a Dify release memctl has been tested with" in message
    assert f"tested: {DIFY_PINNED}" in message and "Nothing was changed" in message
    # Valkey's new image was in the same inventory: nothing moved, Dify stayed at its release.
    assert upgrades.after_refusal == upgrades.containers_before
    assert upgrades.dify_head_after_refusal == DIFY_PINNED


def test_upgrade_replaces_one_container_at_a_time_each_healthy_before_the_next(upgrades: Upgrades) -> None:
    run = upgrades.upgrade
    assert run.returncode == 0, run.output[-4000:]
    assert [(c["container"], c["action"]) for c in run.payload["containers"]] == [
        (VALKEY, "recreated"),
        *((name, "recreated") for name in BRIDGES),
    ]
    # The engine's own record: each container is stopped, replaced and healthy before the next
    # one is touched.
    order = [
        (name, action)
        for name, action in upgrades.events
        if action in ("stop", "destroy", "start", "health_status: healthy")
    ]
    expected = []
    for name in (VALKEY, *BRIDGES):
        expected += [(name, "stop"), (name, "destroy"), (name, "start"), (name, "health_status: healthy")]
    assert [event for event in order if event in expected] == expected, upgrades.events
    for name, image in [(VALKEY, NEXT_VALKEY), *((bridge, NEXT_BRIDGE) for bridge in BRIDGES)]:
        assert _docker("inspect", "--format", "{{.Config.Image}}", name) == image
        assert _docker("inspect", "--format", "{{.State.Health.Status}}", name) == "healthy"
    assert all(upgrades.containers_after[n] != upgrades.containers_before[n] for n in (VALKEY, *BRIDGES))
    # Valkey's data lives on its volume and was synced on a clean shutdown.
    assert upgrades.probe_after == b"kept"


def test_a_second_upgrade_to_the_running_versions_changes_nothing(upgrades: Upgrades) -> None:
    again = upgrades.again
    assert again.returncode == 0, again.output[-4000:]
    assert again.payload["changed"] == 0, again.output[-4000:]
    assert again.payload["containers"] == []
    assert upgrades.containers_after_again == upgrades.containers_after


def test_status_shows_every_stack_project_with_its_versions_and_health(
    upgrades: Upgrades, stack: Stack
) -> None:
    run = memctl(stack, "status", "--inventory", str(stack.inventory), "--json")
    assert run.returncode == 0, run.output[-4000:]
    projects = {p["slug"]: p for p in run.payload["projects"]}
    assert sorted(projects) == sorted(SLUGS)
    for slug in SLUGS:
        project = projects[slug]
        assert project["ok"] is True
        assert project["mode"] == "stack"
        bridge = project["bridge"]
        assert bridge["container"] == f"memctl-bridge-{slug}"
        assert bridge["health"] == "healthy"
        assert bridge["image"] == NEXT_BRIDGE
        assert project["versions"]["valkey"] == NEXT_VALKEY
        assert project["versions"]["dify"] == DIFY_PINNED
        assert project["stores"][0]["url"].startswith("valkey://")
        assert project["stores"][0]["healthy"] is True
        assert stack.token(slug) not in run.output


def test_logs_show_the_bridge_container_without_its_token(upgrades: Upgrades, stack: Stack) -> None:
    slug = SLUGS[0]
    run = memctl(stack, "logs", "--project", str(stack.workspaces[slug]), "--json")
    assert run.returncode == 0, run.output[-4000:]
    sources = {source["source"]: source for source in run.payload["sources"]}
    bridge = sources["bridge"]
    assert bridge["name"] == f"memctl-bridge-{slug}"
    # The bridge's start-up line, from the container that the upgrade started.
    assert any("memctl bridge: project" in line and "auth on" in line for line in bridge["lines"])
    assert stack.token(slug) not in run.output
    runs = sources["runs"]
    assert Path(runs["path"]).name.endswith("-upgrade.log")
