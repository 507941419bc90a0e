"""memctl's Ansible content: lint-clean, syntactically valid, and its modules behave."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ansible_collections.memctl.stack.plugins.callback.events import _diff_text
from ansible_collections.memctl.stack.plugins.modules.bridge_token import ensure_token

from .. import yamlfiles
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


_RUNS_A_PROGRAM = {
    f"{prefix}{name}"
    for prefix in ("", "ansible.builtin.", "ansible.legacy.")
    for name in ("command", "shell", "raw", "script")
}
_DOCKER_CLI = re.compile(r"(?:^|[\s;&|(`])docker(?:\s|$)")


def _programs(node: object) -> Iterator[str]:
    """The command line of every command/shell/raw/script task in a tasks or playbook file."""
    if isinstance(node, list):
        for item in node:
            yield from _programs(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in _RUNS_A_PROGRAM:
                args = value if isinstance(value, dict) else {"cmd": value}
                yield str(args.get("cmd") or args.get("_raw_params") or " ".join(args.get("argv") or []))
            else:
                yield from _programs(value)


def test_no_role_or_playbook_task_runs_the_docker_cli() -> None:
    files = [*(REPO / "roles").glob("*/tasks/*.yml"), *(REPO / "roles").glob("*/handlers/*.yml")]
    files += [*(REPO / "playbooks").rglob("*.yml")]
    programs = {str(f.relative_to(REPO)): list(_programs(yamlfiles.load(f.read_text()))) for f in files}
    assert any("dockerd" in line for lines in programs.values() for line in lines), "the scan sees commands"
    offenders = {f: [line for line in lines if _DOCKER_CLI.search(line)] for f, lines in programs.items()}
    assert not {f: lines for f, lines in offenders.items() if lines}, "use memctl.stack's Docker modules"
