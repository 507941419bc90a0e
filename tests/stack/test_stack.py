"""Stack mode end to end on a real Docker engine: playbook runs, containers, ports, tokens, MCP."""

from __future__ import annotations

import json
import stat
import subprocess
from typing import Any

import httpx
import httpx2
import pytest
import testinfra
import valkey
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ..bridges import INITIALIZE, MCP_HEADERS
from .conftest import DIFY_PINNED, SLUGS, VALKEY, Stack

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def host() -> Any:
    return testinfra.get_host("local://")


def _passed(stack: Stack, name: str) -> None:
    run = stack.runs.get(name)
    assert run is not None, f"the {name} run did not happen: {stack.runs['first'].output[-4000:]}"
    assert run.returncode == 0, run.output[-4000:]
    assert all(failed == 0 and unreachable == 0 for _, unreachable, failed in run.recap().values())


def test_first_run_provisions_and_a_second_run_changes_nothing(stack: Stack) -> None:
    _passed(stack, "first")
    assert stack.runs["first"].changed() > 0
    _passed(stack, "second")
    assert stack.runs["second"].changed() == 0, stack.runs["second"].output[-4000:]


def test_check_diff_after_provisioning_reports_no_change(stack: Stack) -> None:
    _passed(stack, "check")
    assert stack.runs["check"].changed() == 0, stack.runs["check"].output[-4000:]
    for slug in SLUGS:
        assert stack.token(slug) not in stack.runs["check"].output


def test_check_diff_shows_no_diff_for_a_container_whose_spec_is_unchanged(stack: Stack) -> None:
    report, _ = json.JSONDecoder().raw_decode(stack.runs["check"].output)
    diffs = [diff for project in report["projects"] for diff in project["diffs"]]
    assert not [diff for diff in diffs if "container" in diff["task"]], diffs
    assert "io.memctl" not in json.dumps(report)


def test_containers_run_and_publish_on_loopback_only(stack: Stack, host: Any) -> None:
    for name, port in [(VALKEY, stack.valkey_port), *((f"memctl-bridge-{s}", stack.ports[s]) for s in SLUGS)]:
        assert host.docker(name).is_running
        published = host.run(f"docker port {name}").stdout.split()
        assert published and all(address.startswith("127.0.0.1:") for address in published[2::3])
        assert f"127.0.0.1:{port}" in published
        assert host.socket(f"tcp://127.0.0.1:{port}").is_listening
        assert not host.socket(f"tcp://0.0.0.0:{port}").is_listening


def test_bridges_answer_health_and_report_healthy(stack: Stack, host: Any) -> None:
    for slug in SLUGS:
        response = httpx.get(f"http://127.0.0.1:{stack.ports[slug]}/health", timeout=5)
        assert response.status_code == 200 and response.json() == {"ok": True}
        health = host.run("docker inspect --format '{{.State.Health.Status}}' memctl-bridge-%s", slug)
        assert health.stdout.strip() == "healthy"


def test_tokens_are_private_and_distinct(stack: Stack, host: Any) -> None:
    for slug in SLUGS:
        token_file = host.file(str(stack.workspaces[slug] / ".memory" / "bridge.token"))
        assert token_file.mode == 0o600
        assert stat.S_IMODE((stack.workspaces[slug] / ".memory").stat().st_mode) & 0o077 == 0
    assert stack.token(SLUGS[0]) != stack.token(SLUGS[1])


def test_valkey_keeps_an_append_only_file_on_a_volume(stack: Stack, host: Any) -> None:
    assert host.run(f"docker exec {VALKEY} valkey-cli config get appendonly").stdout.split() == [
        "appendonly",
        "yes",
    ]
    mounts = json.loads(host.check_output(f"docker inspect --format '{{{{json .Mounts}}}}' {VALKEY}"))
    assert [(m["Type"], m["Destination"]) for m in mounts] == [("volume", "/data")]


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return dict(json.loads(result.content[0].text))


@pytest.mark.anyio
async def test_mcp_client_saves_and_searches_through_the_container_with_its_token(stack: Stack) -> None:
    slug = SLUGS[0]
    url = f"http://127.0.0.1:{stack.ports[slug]}/mcp"
    entry = {
        "id": "stack-runbook",
        "title": "Stack runbook",
        "body": "Valkey behind the bridge container.",
        "type": "reference",
        "tags": ["stack"],
    }
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {stack.token(slug)}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        assert _payload(await client.call_tool("memory_set", entry))["ok"] is True
        found = _payload(await client.call_tool("memory_search", {"query": "valkey bridge container"}))
        assert "stack-runbook" in [result["id"] for result in found["results"]]
    # Stored in the machine's Valkey, under this project's key prefix.
    keys = valkey.Valkey(host="127.0.0.1", port=stack.valkey_port).keys(f"{slug}:mem:*")
    assert f"{slug}:mem:stack-runbook".encode() in keys


@pytest.mark.anyio
async def test_another_projects_token_is_refused(stack: Stack) -> None:
    alpha, beta = SLUGS
    async with httpx.AsyncClient() as http:
        refused = await http.post(
            f"http://127.0.0.1:{stack.ports[alpha]}/mcp",
            json=INITIALIZE,
            headers={**MCP_HEADERS, "Authorization": f"Bearer {stack.token(beta)}"},
        )
        accepted = await http.post(
            f"http://127.0.0.1:{stack.ports[alpha]}/mcp",
            json=INITIALIZE,
            headers={**MCP_HEADERS, "Authorization": f"Bearer {stack.token(alpha)}"},
        )
    assert refused.status_code == 401
    assert accepted.status_code == 200


def test_dify_is_pinned_to_the_tested_tag(stack: Stack) -> None:
    described = subprocess.run(
        ["git", "describe", "--tags", "--exact-match"], cwd=stack.dify_dir, capture_output=True, text=True
    )
    assert described.stdout.strip() == DIFY_PINNED
    assert not (stack.dify_dir / "UNRELEASED").exists()


def test_dify_env_keeps_user_edits_and_holds_a_generated_secret(stack: Stack) -> None:
    env = (stack.dify_dir / "docker" / ".env").read_text()
    assert "CONSOLE_API_URL=https://dify.example\n" in env and "MY_OWN_SETTING=kept\n" in env
    assert "EXPOSE_NGINX_PORT=8080\n" in env
    secret = (stack.dify_state / "secret_key").read_text().strip()
    assert f"SECRET_KEY={secret}\n" in env and "sk-9f73s3ljTXVcMT3Blb3ljTqtsKiGHXVcMT3BlbkFJLK7U" not in env
    assert stat.S_IMODE((stack.dify_dir / "docker" / ".env").stat().st_mode) == 0o600
    for run in stack.runs.values():
        assert secret not in run.output


def test_dify_compose_is_validated_and_up_is_skipped_without_images(stack: Stack) -> None:
    first = stack.runs["first"].output
    assert "Validate the Compose project" in first
    assert "compose-up skipped" in first and "langgenius/dify-api:1.16.0" in first


def test_dify_is_onboarded_once_with_the_key_in_a_private_file(stack: Stack) -> None:
    key_file = stack.dify_state / "dataset_api_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    assert key.startswith("dataset-")
    for run in stack.runs.values():
        assert key not in run.output
    first, second = stack.runs["first"].output, stack.runs["second"].output
    assert "changed: [localhost]" in first.split("Onboard Dify headlessly")[1].split("TASK")[0]
    assert "ok: [localhost]" in second.split("Onboard Dify headlessly")[1].split("TASK")[0]


def test_each_stack_project_is_provisioned_like_any_project(stack: Stack) -> None:
    """site.yml also ran the project roles: settings point at the machine's Valkey under the
    project's prefix, the stdio round trip went through it, and the clients are registered."""
    import tomllib

    for slug in SLUGS:
        workspace = stack.workspaces[slug]
        settings = tomllib.loads((workspace / ".memory" / "config.toml").read_text())
        assert settings["entry_store"] == f"valkey://127.0.0.1:{stack.valkey_port}/0?prefix={slug}:"
        assert "memory" in json.loads((workspace / ".mcp.json").read_text())["mcpServers"]
        keys = valkey.Valkey(port=stack.valkey_port).keys(f"{slug}:mem:memctl/setup")
        assert keys, "the setup entry was saved in Valkey under the project's prefix"
