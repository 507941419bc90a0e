"""`memctl token rotate` against a running HTTP bridge: no restart, no outage, grace enforced."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import httpx
import pytest

from memory_bridge import find_project

from ..bridges import INITIALIZE, MCP_HEADERS, http_bridge
from .conftest import memctl

pytestmark = pytest.mark.integration


def status_with(url: str, token: str) -> int:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    return httpx.post(url, json=INITIALIZE, headers=headers, timeout=10).status_code


def token_in(path: Path) -> str:
    return path.read_text().strip()


def test_rotation_keeps_the_old_token_for_the_grace_period_then_refuses_it(tmp_path: Path) -> None:
    token_file = tmp_path / ".memory" / "bridge.token"
    first = memctl("token", "rotate", "--project", str(tmp_path), "--json")
    assert first.code == 0 and first.json["replaced"] is False
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    old = token_in(token_file)
    assert old not in first.stdout and "token" not in first.json

    with http_bridge(tmp_path, "--token-file", str(token_file)) as bridge:
        assert status_with(bridge.mcp_url, old) == 200
        rotated = memctl("token", "rotate", "--project", str(tmp_path), "--grace", "4s", "--json")
        assert rotated.code == 0 and rotated.json["replaced"] is True
        new = token_in(token_file)
        assert new != old and new not in rotated.stdout and old not in rotated.stdout
        previous = Path(rotated.json["previous_file"])
        assert stat.S_IMODE(previous.stat().st_mode) == 0o600
        grace_ends = time.time() + 4

        assert status_with(bridge.mcp_url, new) == 200  # picked up without a restart
        assert status_with(bridge.mcp_url, old) == 200 or time.time() >= grace_ends
        while status_with(bridge.mcp_url, old) == 200:
            assert time.time() < grace_ends + 30, "the replaced token still works long after its grace"
            time.sleep(0.25)
        assert time.time() >= grace_ends - 1  # refused only once the grace was over
        assert status_with(bridge.mcp_url, new) == 200
        assert status_with(bridge.mcp_url, "guess") == 401


def test_grace_zero_ends_the_old_token_at_once_and_show_prints_the_new_one(tmp_path: Path) -> None:
    token_file = tmp_path / ".memory" / "bridge.token"
    assert memctl("token", "rotate", "--project", str(tmp_path)).code == 0
    old = token_in(token_file)
    with http_bridge(tmp_path, "--token-file", str(token_file)) as bridge:
        shown = memctl("token", "rotate", "--project", str(tmp_path), "--grace", "0", "--show", "--json")
        assert shown.code == 0
        new = token_in(token_file)
        assert shown.json["token"] == new
        assert status_with(bridge.mcp_url, old) == 401
        assert status_with(bridge.mcp_url, new) == 200


def test_a_bad_grace_is_refused_and_the_token_file_is_untouched(tmp_path: Path) -> None:
    assert memctl("token", "rotate", "--project", str(tmp_path)).code == 0
    token_file = tmp_path / ".memory" / "bridge.token"
    before = token_in(token_file)
    bad = memctl("token", "rotate", "--project", str(tmp_path), "--grace", "soon")
    assert bad.code == 2 and "not a duration" in bad.stderr
    assert token_in(token_file) == before


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "loose.token"
    token_file.write_text("abc\n")
    token_file.chmod(0o644)
    refused = memctl("token", "rotate", "--project", str(tmp_path), "--token-file", str(token_file), "--json")
    assert refused.code == 2 and "chmod 600" in refused.json["message"]
    assert token_in(token_file) == "abc"


def test_rotate_outside_a_project_refuses_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: run where no project is, `token rotate` made a `.memory/` there."""
    assert find_project(tmp_path) is None
    monkeypatch.chdir(tmp_path)
    refused = memctl("token", "rotate", "--json")
    assert refused.code == 3 and refused.json["error"] == "NotFound"
    assert "no memctl project" in refused.json["message"] and "--project DIR" in refused.json["message"]
    assert list(tmp_path.iterdir()) == []
    named = memctl("token", "rotate", "--project", str(tmp_path), "--json")
    assert named.code == 0 and Path(named.json["token_file"]) == tmp_path / ".memory" / "bridge.token"
