"""memctl's Ansible content: lint-clean, syntactically valid, and its modules behave."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.memctl.stack.plugins.callback.events import _diff_text
from ansible_collections.memctl.stack.plugins.modules.bridge_token import ensure_token

from .helpers import ansible_playbook

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_ansible_lint_production_profile_is_clean() -> None:
    run = subprocess.run(
        [str(BIN / "ansible-lint"), "--profile", "production", "--offline", "--nocolor"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("playbook", sorted(p.name for p in (REPO / "playbooks").glob("*.yml")))
def test_every_playbook_passes_the_syntax_check(playbook: str) -> None:
    run = ansible_playbook("--syntax-check", "-i", "inventories/local", f"playbooks/{playbook}", timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_bridge_token_is_created_once_private_and_never_returned(tmp_path: Path) -> None:
    token = tmp_path / ".memory" / "bridge.token"
    assert ensure_token(token, check=True) == {"changed": True, "created": True}
    assert not token.parent.exists(), "check mode writes nothing"
    result = ensure_token(token, check=False)
    assert result == {"changed": True, "created": True}
    secret = token.read_text().strip()
    assert len(secret) == 43 and secret.isalnum()
    assert token.stat().st_mode & 0o777 == 0o600 and token.parent.stat().st_mode & 0o777 == 0o700
    assert ensure_token(token, check=False) == {"changed": False, "created": False}
    assert token.read_text().strip() == secret, "an existing token is kept"
    token.chmod(0o644)
    assert ensure_token(token, check=False) == {"changed": True, "created": False}
    assert token.stat().st_mode & 0o777 == 0o600 and token.read_text().strip() == secret


def test_an_empty_token_file_gets_a_token(tmp_path: Path) -> None:
    token = tmp_path / "bridge.token"
    token.write_text("")
    assert ensure_token(token, check=False)["created"] is True
    assert len(token.read_text().strip()) == 43


def test_events_turn_module_diffs_into_text() -> None:
    assert _diff_text({}) is None
    assert _diff_text({"diff": [{"prepared": "--- a\n+++ b\n"}]}) == "--- a\n+++ b\n"
    text = _diff_text({"diff": {"before": "x", "after": "y", "after_header": "f"}})
    assert text is not None and "-x" in text and "+y" in text
    # Specs are compared as data: the same spec with its keys in another order is no diff.
    spec = {"image": "i", "env": {"A": "1", "B": "2"}}
    assert (
        _diff_text({"diff": {"before": spec, "after": {"env": {"B": "2", "A": "1"}, "image": "i"}}}) is None
    )
    changed = _diff_text({"diff": {"before": spec, "after": {**spec, "image": "j"}}})
    assert changed is not None and '-  "image": "i"' in changed and '+  "image": "j"' in changed
