"""The bridge's log on a real Valkey: each refused request and each backend outage and
recovery in one line, and never the token."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest

from ..bridges import INITIALIZE, MCP_HEADERS, free_port, http_bridge
from ..servers import run_server, valkey_server_binary

pytestmark = [pytest.mark.integration]

TOKEN = "k3YtEsTt0kenThatMustNeverAppearInTheLog42"


class Lines:
    """The lines a process writes to a pipe, collected as they come."""

    def __init__(self, stream: object) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        try:
            for raw in stream:  # type: ignore[attr-defined]
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
        except (ValueError, OSError):
            pass  # the pipe was closed when the process stopped

    def matching(self, text: str) -> list[str]:
        return [line for line in self.lines if text in line]

    def wait_for(self, text: str, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while not self.matching(text):
            assert time.monotonic() < deadline, f"no log line with {text!r} in:\n" + "\n".join(self.lines)
            time.sleep(0.1)


def test_refused_requests_and_a_valkey_outage_are_logged_once_each(tmp_path: Path) -> None:
    token_file = tmp_path / "bridge.token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    port = free_port()
    with (
        run_server(valkey_server_binary(), port=port) as server,
        http_bridge(tmp_path, "--entry-store", server.url, "--token-file", str(token_file)) as bridge,
    ):
        log = Lines(bridge.process.stderr)
        authorised = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
        wrong = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN[:-1]}x"}
        assert httpx.post(bridge.mcp_url, json=INITIALIZE, headers=MCP_HEADERS).status_code == 401
        assert httpx.post(bridge.mcp_url, json=INITIALIZE, headers=wrong).status_code == 401
        misdirected = {**authorised, "Host": "evil.example"}
        assert httpx.post(bridge.mcp_url, json=INITIALIZE, headers=misdirected).status_code == 421
        log.wait_for("421")

        server.stop()
        log.wait_for("backend outage")
        assert httpx.get(f"{bridge.base_url}/health", timeout=5).status_code == 503
        with run_server(valkey_server_binary(), port=port):
            log.wait_for("backend recovered")
            assert httpx.get(f"{bridge.base_url}/health", timeout=5).status_code == 200

    rejected = log.matching("rejected POST /mcp from 127.0.0.1:")
    assert len(rejected) == 3, log.lines
    assert rejected[0].endswith(": 401 no bearer token")
    assert rejected[1].endswith(": 401 bearer token not accepted")
    assert rejected[2].endswith(": 421 Invalid Host header (evil.example)")
    assert not log.matching("Invalid Host header: evil.example"), "the transport's own line is not repeated"
    outage = log.matching("backend outage")
    assert len(outage) == 1 and f"entry store valkey://127.0.0.1:{port}/0 is unavailable" in outage[0]
    recovered = log.matching("backend recovered")
    assert len(recovered) == 1 and f"entry store valkey://127.0.0.1:{port}/0 answers again" in recovered[0]
    assert not log.matching(TOKEN) and not log.matching(TOKEN[:-1])
