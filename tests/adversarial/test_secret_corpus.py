"""Issue 13, finding 5: secrets are redacted before anything is stored, for entries too.

The corpus (`secret_corpus.py`) holds the secret formats and the harmless look-alikes.
The redactor must remove every secret and leave every look-alike byte for byte; through a
real bridge process, neither memory_set nor save_to_dataset may put a secret on disk,
unless the operator turns entry redaction off, which the bridge then says at start-up.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from memory_bridge.core import redact
from tests.adversarial.secret_corpus import LOOKALIKES, SECRETS, Secret
from tests.bridges import stdio_params

pytestmark = pytest.mark.anyio

ISSUE_FORMATS = [  # named by the issue as stored in clear or missed
    "aws secret access key",
    "db password env",
    "mysql root password",
    "pgpassword",
    "redis url no user",
    "valkey url no user",
    "github oauth token",
    "github app server token",
    "client secret yaml",
    "basic auth header",
    "pem private key",
    "github classic pat",
    "aws access key id",
    "password line",
]
ISSUE_32_FORMATS = [  # the variants issue 32 found leaking from bodies and texts
    "qualified token name",
    "secret key base",
    "numbered db password",
    "curl user flag",
    "docker config auth",
    "url password with at sign",
    "aws configure set",
    "password in prose",
]


def test_the_corpus_is_as_large_as_the_issue_asks() -> None:
    assert len({s.name for s in SECRETS}) >= 80
    assert len(set(LOOKALIKES)) >= 300
    assert set(ISSUE_FORMATS + ISSUE_32_FORMATS) <= {s.name for s in SECRETS}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=[abc-123]", "password=[REDACTED]"),
        ("token: a]b9", "token: [REDACTED]"),
        ("DB_PASSWORD=x7]y z", "DB_PASSWORD=[REDACTED] z"),
        ("[password=abc123]", "[password=[REDACTED]]"),  # the bracket is the text's own
        ("f(api_key=k3y)", "f(api_key=[REDACTED])"),
    ],
)
def test_a_marker_replaces_the_whole_value_and_only_it(text: str, expected: str) -> None:
    """Issue 32: `password=[abc-123]` became `password=[REDACTED]]`, a piece of the value kept."""
    assert redact(text) == expected


@pytest.mark.parametrize("case", SECRETS, ids=lambda s: s.name)
def test_every_secret_format_is_redacted_once_and_for_all(case: Secret) -> None:
    redacted = redact(case.text)
    assert case.secret not in redacted
    assert "[REDACTED" in redacted
    assert redact(redacted) == redacted


@pytest.mark.parametrize("text", LOOKALIKES)
def test_harmless_lookalikes_pass_unchanged(text: str) -> None:
    assert redact(text) == text


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(json.loads(result.content[0].text))


def _on_disk(project: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((project / ".memory").rglob("*")) if p.is_file())


NOTE = "\n".join(s.text for s in SECRETS)
TITLE = f"creds {SECRETS[0].secret}"  # an AWS key id in the title too


async def _save_everything(project: Path, errlog: Any, **env: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """memory_set and save_to_dataset with every secret, through a real stdio bridge."""
    params = stdio_params(project, MEMCTL_EMBEDDING_MODEL="none", **env)
    async with Client(stdio_client(params, errlog=errlog)) as client:
        entry = {"id": "creds", "title": TITLE, "body": NOTE, "type": "reference", "tags": ["ops"]}
        _payload(await client.call_tool("memory_set", entry))
        _payload(
            await client.call_tool(
                "save_to_dataset", {"dataset": "knowledge", "name": "creds.md", "text": NOTE}
            )
        )
        got = _payload(await client.call_tool("memory_get", {"id": "creds"}))
        history = _payload(await client.call_tool("memory_history", {"id": "creds"}))
        found = _payload(await client.call_tool("memory_search", {"query": SECRETS[0].secret}))
        return got, {"history": history, "search": found}


async def test_entries_and_knowledge_never_reach_the_disk_with_a_secret(tmp_path: Path) -> None:
    with tempfile.TemporaryFile("w+") as errlog:
        got, seen = await _save_everything(tmp_path, errlog)
    shown = json.dumps([got, seen])
    disk = _on_disk(tmp_path)
    leaked = [s.name for s in SECRETS if s.secret in shown or s.secret.encode() in disk]
    assert leaked == []
    assert got["title"].startswith("creds AKIA[REDACTED]")
    assert seen["search"]["count"] == 0


async def test_turning_entry_redaction_off_is_loud_and_leaves_knowledge_redacted(tmp_path: Path) -> None:
    with tempfile.TemporaryFile("w+") as errlog:
        got, _ = await _save_everything(tmp_path, errlog, MEMCTL_REDACT_ENTRIES="false")
        errlog.seek(0)
        stderr = errlog.read()
    assert "redact_entries is false: memory_set stores secrets verbatim" in stderr
    assert got["body"] == NOTE  # memory-mcp parity, as asked for
    knowledge = (tmp_path / ".memory" / "knowledge.db").read_bytes()
    assert [s.name for s in SECRETS if s.secret.encode() in knowledge] == []
