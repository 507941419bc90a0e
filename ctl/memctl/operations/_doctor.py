"""`memctl doctor`'s checks: each prerequisite and component, and what to do when one fails."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio

from memory_bridge import MemctlError, Settings, StoreError, load_settings
from memory_bridge.search import LazyEmbedder
from memory_bridge.stores import make_embedder, open_knowledge_store, open_stores, unversioned
from memory_bridge.stores.dify import TESTED_RANGE, DurableKnowledgeStore, is_tested_version
from memory_bridge.stores.sqlite import SqliteKnowledgeStore

from ..provision._clients import ALL_CLIENTS, Client, Plan, apply
from ..provision._content import content_root
from ..provision._proof import prove
from ..provision._record import recorded_project
from ..provision._registry import read_registry, registry_path
from ..provision._stores import embedded_states
from ..provision._user_files import files_of
from ._containers import bridge_container
from ._modes import loose_modes

__all__ = ["Check", "run_checks"]

Status = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, how it stands, and what to do if it is not ok."""

    name: str
    status: Status
    detail: str
    fix: str = ""


def _python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    return Check("python", "ok", f"Python {version} at {sys.executable}")


def _ansible() -> Check:
    beside = Path(sys.executable).with_name("ansible-playbook")
    binary = str(beside) if beside.exists() else shutil.which("ansible-playbook")
    if not binary:
        return Check(
            "ansible", "fail", "ansible-playbook not found", "reinstall memctl (it depends on ansible-core)"
        )
    try:
        root = content_root()
    except MemctlError as exc:
        return Check("ansible", "fail", str(exc), "reinstall memctl")
    from ansible.release import __version__

    return Check("ansible", "ok", f"ansible-core {__version__}; playbooks in {root / 'playbooks'}")


def _embedding_model() -> Check:
    missing = [
        name for name in ("onnxruntime", "tokenizers", "onnx") if importlib.util.find_spec(name) is None
    ]
    if missing:
        return Check(
            "embedding model",
            "warn",
            f"{', '.join(missing)} missing: knowledge search falls back to keywords (degraded)",
            "reinstall memctl with its dependencies",
        )
    return Check("embedding model", "ok", "all-MiniLM-L6-v2 (int8 kernels, CPU) available")


def _docker() -> Check:
    if not shutil.which("docker"):
        return Check(
            "docker", "fail", "docker CLI not found", "install Docker (Debian: apt-get install docker.io)"
        )
    info = subprocess.run(
        ["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True
    )
    if info.returncode != 0:
        return Check(
            "docker",
            "fail",
            "the Docker engine does not answer",
            "start it: systemctl start docker (or dockerd &)",
        )
    compose = subprocess.run(["docker", "compose", "version", "--short"], capture_output=True, text=True)
    if compose.returncode != 0:
        return Check(
            "docker",
            "fail",
            f"engine {info.stdout.strip()}, but no Compose v2",
            "memctl up for a stack project installs the compose plugin",
        )
    return Check("docker", "ok", f"engine {info.stdout.strip()}, Compose {compose.stdout.strip()}")


def _registry() -> Check:
    try:
        inventory = read_registry()
    except MemctlError as exc:
        return Check("projects", "fail", str(exc), f"fix {registry_path()} (the message names the field)")
    if inventory is None:
        return Check("projects", "ok", "none registered (memctl projects add DIR)")
    return Check("projects", "ok", f"{len(inventory.projects)} registered in {registry_path()}")


async def _store(name: str, url: str, ping: Callable[[], object]) -> Check:
    try:
        with anyio.fail_after(5):
            await ping()  # type: ignore[misc]
    except (StoreError, TimeoutError) as exc:
        return Check(
            f"{name} store", "fail", f"{url}: {exc or 'timed out'}", "start the store, or fix its URL"
        )
    return Check(f"{name} store", "ok", url)


def _dify_version(version: str | None) -> Check:
    """The Dify release the knowledge store talks to, against the range memctl is tested on."""
    if version is None:
        return Check(
            "dify version",
            "warn",
            "Dify did not name its version (no X-Version header)",
            f"check that it is Dify {TESTED_RANGE}",
        )
    if not is_tested_version(version):
        return Check(
            "dify version",
            "warn",
            f"Dify {version} is outside the tested range {TESTED_RANGE}",
            f"use Dify {TESTED_RANGE}, or expect memctl to misread some answers",
        )
    return Check("dify version", "ok", f"Dify {version} (tested range {TESTED_RANGE})")


async def _stores(project: Path) -> list[Check]:
    settings = load_settings(project=project)
    async with open_stores(settings) as (entries, knowledge):
        checks = [
            await _store("entry", entries.url, entries.ping),
            await _store("knowledge", knowledge.url, knowledge.ping),
        ]
        durable = unversioned(knowledge)
        if checks[-1].status == "ok" and isinstance(durable, DurableKnowledgeStore):
            checks.append(_dify_version(durable.server_version))
        sqlite = checks[-1].status == "ok" and isinstance(durable, SqliteKnowledgeStore)
    embedder = make_embedder(settings) if sqlite else None
    index = await _vector_index(settings, embedder) if embedder is not None else None
    return checks if index is None else [*checks, index]


async def _vector_index(settings: Settings, embedder: LazyEmbedder) -> Check | None:
    """The embedded knowledge store's ANN vector index (knowledge.ann), where one is due
    (the store opened with its model, which is not loaded for this)."""
    versioned = open_knowledge_store(settings, embedder)
    try:
        store = unversioned(versioned)
        state = await store.vector_index_state() if isinstance(store, SqliteKnowledgeStore) else None
    finally:
        await versioned.close()
    if state is None:
        return None
    name = "vector index"
    fix = "memctl migrate rebuilds it now (else the bridge does at its next search, exact meanwhile)"
    if state.usable:
        return Check(name, "ok", f"{state.path}: {state.saved}")
    if not state.needed:
        return Check(
            name,
            "ok",
            f"exact search ({state.passages} passages, below search_ann_threshold {state.threshold})",
        )
    return Check(name, "warn", f"{state.path}: {state.saved}, with {state.passages} passages", fix)


_CLIENT_MARKERS: dict[Client, str] = {
    "claude": ".mcp.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".vscode/mcp.json",
    "agents": ".agents/mcp.json",
}


def _configured_clients(project: Path) -> frozenset[Client]:
    """The clients a project has files for (all of them when it has none yet)."""
    present = frozenset(c for c, marker in _CLIENT_MARKERS.items() if (project / marker).exists())
    return present or ALL_CLIENTS


def _modes(memory: Path) -> Check:
    loose = loose_modes(memory)
    if not loose:
        return Check("file modes", "ok", f"{memory} and everything in it are private (0700 / 0600)")
    shown = ", ".join(f"{path} ({mode:o})" for path, mode in loose[:5])
    more = f" and {len(loose) - 5} more" if len(loose) > 5 else ""
    return Check(
        "file modes",
        "fail",
        f"other local users can read memory, tokens or logs: {shown}{more}",
        f"chmod -R go-rwx {memory}",
    )


def _project(project: Path) -> list[Check]:
    memory = project / ".memory"
    if not memory.is_dir():
        return [Check("project", "fail", f"{project} is not provisioned (no .memory/)", "run: memctl up")]
    checks = []
    settings = load_settings(project=project)
    stale = [s for s in embedded_states(settings) if not s.current]
    checks.append(
        Check(
            "schema",
            "warn",
            ", ".join(f"{s.kind} at v{s.version} of v{s.latest}" for s in stale),
            "run: memctl up",
        )
        if stale
        else Check("schema", "ok", "every embedded store is at the latest schema")
    )
    checks.append(_modes(memory))
    token = memory / "bridge.token"
    if not token.exists():
        checks.append(Check("bridge token", "warn", "none yet (needed for --http)", "run: memctl up"))
    elif token.stat().st_mode & 0o077:
        checks.append(Check("bridge token", "fail", f"{token} is readable by others", f"chmod 600 {token}"))
    else:
        checks.append(Check("bridge token", "ok", f"{token} (0600)"))
    checks += anyio.run(_stores, project)
    plan = Plan(project=project, clients=_configured_clients(project))
    changes = apply(project, plan, check=True)
    pending = [c for c in changes if c.action in ("created", "updated")]
    edited = [c for c in changes if c.action == "edited-left-alone"]
    checks += _client_starts(project)
    if pending:
        names = ", ".join(
            str(c.path.relative_to(project)) for c in pending[:4] if c.path.is_relative_to(project)
        )
        checks.append(Check("client configs", "warn", f"out of date: {names}", "run: memctl up"))
    else:
        checks.append(Check("client configs", "ok", "every client is registered"))
    if edited:
        names = ", ".join(str(c.path) for c in edited)
        checks.append(
            Check(
                "owned files", "warn", f"edited by hand: {names}", "delete them and run memctl up to restore"
            )
        )
    return checks


def _client_starts(project: Path) -> list[Check]:
    """Each client's server, started exactly as its file says."""
    checks = []
    for proof in anyio.run(prove, project, "memory", files_of(project)):
        where = ", ".join(proof.files)
        if proof.ok:
            checks.append(Check("client start", "ok", f"{where}: {proof.command} serves {proof.tools} tools"))
        else:
            fix = "run: memctl up (it rewrites the launcher and the client files)"
            checks.append(Check("client start", "fail", f"{where}: {proof.command}: {proof.error}", fix))
    return checks


def _bridge(slug: str) -> Check:
    bridge = bridge_container(slug)
    if bridge["health"] == "healthy":
        return Check("bridge container", "ok", f"{bridge['container']} healthy, image {bridge['image']}")
    detail = bridge.get("error") or f"{bridge['container']} is {bridge['health']}"
    return Check("bridge container", "fail", detail, "memctl logs --source bridge; then: memctl up")


def run_checks(project: Path, *, stack: bool) -> list[Check]:
    """Every check for this machine and the project; Docker only when a stack is in play."""
    checks = [_python(), _ansible(), _embedding_model(), _registry()]
    registry = read_registry() if checks[-1].status == "ok" else None
    try:
        recorded = recorded_project(project)
    except MemctlError as exc:
        recorded = None
        checks.append(Check("project record", "fail", str(exc), "run: memctl up"))
    uses_stack = (
        stack
        or (registry is not None and any(p.mode == "stack" for _, p in registry.projects))
        or (recorded is not None and recorded.mode == "stack")
    )
    if uses_stack:
        checks.append(_docker())
    if recorded is not None and recorded.mode == "stack":
        checks.append(_bridge(recorded.slug))
    try:
        checks += _project(project)
    except MemctlError as exc:
        checks.append(
            Check("project", "fail", str(exc), "fix the setting the message names (.memory/config.toml)")
        )
    return checks
