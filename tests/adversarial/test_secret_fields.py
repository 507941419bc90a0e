"""Issue 32, finding 3: no secret is kept in any stored field, on any store.

Every form of the secret corpus goes through every free-text field of every writing
tool (memory_set, save_to_dataset, save_lesson, write_memory, absorb_files), driven
through an MCP client, on the embedded stores, on Valkey with the Dify emulator, and on
the real Dify when CI has it. Neither what the read tools answer nor what the stores
hold (the SQLite files, every Valkey key, the Dify datasets) may contain one.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import Client

from memory_bridge import build_server, load_settings, open_state
from memory_bridge.stores import KnowledgeStore
from memory_bridge.stores.dify import onboard

from ..bridges import free_port
from ..emulators.dify.app import create_app
from ..real_dify import RealDify, delete_datasets, unique_prefix
from ..servers import RunningServer, run_server, valkey_server_binary
from .secret_corpus import SECRETS

pytestmark = pytest.mark.anyio

SLOTS = ["knowledge", "self_improvement", "plans"]
_TAG = re.compile(r"^[^,\s](?:[^,]*[^,\s])?$")  # the Tag argument type's pattern

# The four fields the issue found stored verbatim, each with a bare token.
STRIPE = next(s.secret for s in SECRETS if s.name == "stripe live secret")
AWS_KEY_ID = next(s.secret for s in SECRETS if s.name == "aws access key id")
GITLAB = next(s.secret for s in SECRETS if s.name == "gitlab pat")
GITHUB = next(s.secret for s in SECRETS if s.name == "github classic pat")
BARE = (STRIPE, AWS_KEY_ID, GITLAB, GITHUB)


def _fits(value: str, limit: int, *, tag: bool = False) -> str | None:
    return value if len(value) <= limit and (not tag or _TAG.match(value)) else None


def payload(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


@dataclass
class Served:
    client: Client
    project: Path
    stored: Callable[[], Awaitable[bytes]]  # everything the stores hold


@pytest.fixture(scope="module")
def valkey_server() -> Iterator[RunningServer]:
    with run_server(valkey_server_binary()) as server:
        yield server


_READERS = {
    "string": lambda c, k: c.get(k),
    "hash": lambda c, k: c.hgetall(k),
    "list": lambda c, k: c.lrange(k, 0, -1),
    "set": lambda c, k: c.smembers(k),
    "zset": lambda c, k: c.zrange(k, 0, -1, withscores=True),
    "stream": lambda c, k: c.xrange(k),
}


def _valkey_dump(server: RunningServer) -> bytes:
    """Every key and every value of the server's database 0."""
    client = server.client()
    parts: list[bytes] = []
    for key in client.scan_iter(count=1000):
        value = _READERS[client.type(key).decode()](client, key)
        parts += [key, repr(value).encode()]
    client.close()
    return b"\n".join(parts)


async def _documents(store: KnowledgeStore) -> bytes:
    """Every document of every slot as the store reads it back: name, text, metadata."""
    found: list[str] = []
    for slot in await store.list_slots():
        documents, _ = await store.list_documents(slot.name, offset=0, limit=10_000)
        found += [repr((d.name, d.text, d.metadata, d.marks)) for d in documents]
    return "\n".join(found).encode()


def _memory_files(project: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((project / ".memory").rglob("*")) if p.is_file())


@pytest.fixture(scope="module")
def emulator() -> Iterator[tuple[str, Any, str]]:
    """The Dify emulator served on a loopback port, onboarded: its origin, app and API key."""
    app = create_app(version="1.14.2")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    origin = f"http://127.0.0.1:{port}"
    report = anyio.run(
        lambda: onboard(origin, email="admin@example.com", password="Passw0rd123", slots=SLOTS)
    )
    yield origin, app, report.api_key
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(
    params=["embedded", "valkey+dify-emulator", pytest.param("real-dify", marks=pytest.mark.real_dify)]
)
async def served(
    request: pytest.FixtureRequest, tmp_path: Path, emulator: tuple[str, Any, str]
) -> AsyncIterator[Served]:
    """A client of a bridge on the parameter's stores, and a reader of all they hold."""
    project = tmp_path / "shop-api"
    project.mkdir()
    flags: dict[str, Any] = {"slots": SLOTS, "embedding_model": "none"}
    server: RunningServer | None = None
    app: Any = None
    target: RealDify | None = None
    prefix = unique_prefix()
    if request.param.startswith("valkey"):
        server = request.getfixturevalue("valkey_server")
        server.client().flushall()
        origin, app, key = emulator
        flags |= {
            "entry_store": server.url,
            "knowledge_store": f"dify+{origin}/v1",
            "dify_api_key": key,
            "dify_dataset_prefix": prefix,  # a test's own datasets
        }
    elif request.param == "real-dify":
        target = request.getfixturevalue("real_dify")
        flags |= {
            "knowledge_store": f"dify+{target.url}/v1",
            "dify_api_key": target.api_key,
            "dify_dataset_prefix": prefix,
            "dify_indexing_technique": "economy",
            "dify_wait_indexed": True,
        }
    async with open_state(load_settings(project=project, **flags)) as state:
        for slot in SLOTS:
            await state.knowledge.create_slot(slot)

        async def stored() -> bytes:
            held = [_memory_files(project), await _documents(state.knowledge)]
            if server is not None:
                held.append(_valkey_dump(server))
            if app is not None:
                held.append(repr(app.state.dify.datasets).encode())
            return b"\n".join(held)

        try:
            async with Client(build_server(state)) as client:
                yield Served(client, project, stored)
        finally:
            if target is not None:
                delete_datasets(target, prefix)


def _leaked(secrets: list[str], *texts: bytes | str) -> list[str]:
    """The secrets found in any of `texts`, in any letter case (an index may lowercase)."""
    held = b"\n".join(t if isinstance(t, bytes) else t.encode() for t in texts).lower()
    return [s for s in secrets if s.lower().encode() in held]


async def _set_entries(client: Client) -> list[Any]:
    """One entry per corpus form, the form's line in every field it fits, and the issue's
    bare tokens in tags, source and project; what get and history answer."""
    answers: list[Any] = []
    cases = [
        {
            "id": f"s{i}",
            "title": _fits(s.text, 512) or s.name,
            "body": s.text,
            "type": "reference",
            "tags": [t for t in (_fits(s.text, 64, tag=True), "corpus") if t],
            "source": _fits(s.text, 256) or "corpus",
            "project": _fits(s.text, 256) or "",
        }
        for i, s in enumerate(SECRETS)
    ]
    cases.append(
        {
            "id": "bare",
            "title": "bare tokens",
            "body": "see tags",
            "type": "reference",
            "tags": [STRIPE, "ops"],
            "source": AWS_KEY_ID,
            "project": GITLAB,
        }
    )
    for case in cases:
        answers.append(payload(await client.call_tool("memory_set", case)))
        answers.append(payload(await client.call_tool("memory_get", {"id": case["id"]})))
        answers.append(payload(await client.call_tool("memory_history", {"id": case["id"]})))
    return answers


async def _save_documents(client: Client, project: Path) -> list[Any]:
    """One document and one lesson per corpus form, the form's line in every field it fits;
    a document named by a bare token with tokens in its metadata; an absorbed file."""
    answers: list[Any] = []
    for i, s in enumerate(SECRETS):
        line = _fits(s.text, 200)
        metadata = {k: line for k in ("project_module", "language", "task_type", "error_pattern") if line} | {
            "tags": [line or "corpus"]
        }
        document = {"dataset": "knowledge", "name": f"{i} {_fits(s.text, 170) or s.name}", "text": s.text}
        answers.append(payload(await client.call_tool("save_to_dataset", {**document, "metadata": metadata})))
        lesson = {
            "title": _fits(s.text, 200) or s.name,
            "body": s.text,
            "metadata": {
                "project_module": line or "corpus",
                "task_type": line or "corpus",
                "language": line or "corpus",
                "error_pattern": f"form-{i}",
            },
            "tags": [line or "corpus"],
            "evidence": s.text,
        }
        answers.append(payload(await client.call_tool("save_lesson", lesson)))
    bare = {"project_module": GITHUB, "task_type": STRIPE, "language": AWS_KEY_ID, "tags": [GITLAB]}
    answers.append(
        payload(
            await client.call_tool(
                "save_to_dataset",
                {"dataset": "knowledge", "name": f"deploy {GITHUB}", "text": "bare", "metadata": bare},
            )
        )
    )
    note = "\n".join(s.text for s in SECRETS)
    answers.append(
        payload(
            await client.call_tool("write_memory", {"name": f"w {GITHUB}", "text": note, "dataset": "plans"})
        )
    )
    (project / "docs").mkdir()
    (project / "docs" / f"{GITHUB}.md").write_text(note)
    absorbed = payload(await client.call_tool("absorb_files", {"files": [f"docs/{GITHUB}.md"]}))
    assert [r.pop("file") for r in absorbed["results"]] == [f"docs/{GITHUB}.md"]  # the caller's own argument
    return [*answers, absorbed]


async def _read_back(client: Client) -> list[Any]:
    """What the read tools answer about everything saved."""
    reads = [
        ("memory_list", {"limit": 100}),
        ("memory_search", {"query": "password token key", "limit": 100}),
        ("memory_search", {"tags": ["corpus"], "limit": 100}),
        ("search_memory", {"query": "password token key secret", "maxResults": 50, "scoreThreshold": 0}),
        ("search_memory", {"query": "deploy bare", "maxResults": 50, "scoreThreshold": 0}),
    ]
    return [payload(await client.call_tool(name, arguments)) for name, arguments in reads]


async def test_no_secret_is_kept_in_any_field_of_any_store(served: Served) -> None:
    written = await _set_entries(served.client) + await _save_documents(served.client, served.project)
    read = await _read_back(served.client)
    secrets = [s.secret for s in SECRETS]
    assert _leaked(secrets, json.dumps(written), json.dumps(read)) == []
    held = await served.stored()
    assert _leaked(secrets, held) == []
    assert held.count(b"[REDACTED") > len(SECRETS)  # the writes did land
    assert "[REDACTED]]" not in json.dumps(written)  # no marker leaves a bracket behind


async def test_each_field_the_issue_found_stored_verbatim_is_redacted(served: Served) -> None:
    """Stripe key in tags, AWS key id in source, GitLab token in project, GitHub token in a
    document's name and metadata; and a type, free text within its pattern."""
    client = served.client
    entry = {"id": "e", "title": "t", "body": "b", "type": AWS_KEY_ID, "tags": [STRIPE]}
    payload(await client.call_tool("memory_set", {**entry, "source": AWS_KEY_ID, "project": GITLAB}))
    got = payload(await client.call_tool("memory_get", {"id": "e"}))
    assert (got["type"], got["tags"], got["source"], got["project"]) == (
        "AKIA[REDACTED]",
        ["sk_live_[REDACTED]"],
        "AKIA[REDACTED]",
        "glpat-[REDACTED]",
    )
    saved = payload(
        await client.call_tool(
            "save_to_dataset",
            {
                "dataset": "knowledge",
                "name": f"ci {GITHUB}",
                "text": "ci notes",
                "metadata": {"task_type": GITHUB},
            },
        )
    )
    assert saved["name"] == "ci ghp_[REDACTED]"
    found = payload(await client.call_tool("search_memory", {"query": "ci notes", "scoreThreshold": 0}))
    assert [(r["documentName"], r["metadata"]["task_type"]) for r in found["records"]] == [
        ("ci ghp_[REDACTED]", "ghp_[REDACTED]")
    ]
    assert _leaked(list(BARE), await served.stored()) == []


async def test_an_id_holding_a_secret_is_refused_without_echoing_it(served: Served) -> None:
    result = await served.client.call_tool(
        "memory_set", {"id": AWS_KEY_ID, "title": "t", "body": "b", "type": "reference", "tags": []}
    )
    assert result.is_error
    assert (
        AWS_KEY_ID not in result.content[0].text
        and "id: looks like it holds a secret" in result.content[0].text
    )
