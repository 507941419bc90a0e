"""One token generator for the bridge, `memctl token rotate` and the Ansible module."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.memctl.stack.plugins.modules.bridge_token import ensure_token
from memory_bridge import new_token, rotate_token


def test_tokens_are_43_letters_and_digits_and_differ() -> None:
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50 and all(len(t) == 43 and t.isascii() and t.isalnum() for t in tokens)


def test_rotation_and_provisioning_make_tokens_alike(tmp_path: Path) -> None:
    rotated = rotate_token(tmp_path / "rotated.token", grace_seconds=0).token
    ensure_token(tmp_path / "provisioned.token", check=False)
    provisioned = (tmp_path / "provisioned.token").read_text().strip()
    assert len(rotated) == len(provisioned) == 43 and rotated.isalnum() and provisioned.isalnum()
