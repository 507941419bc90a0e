"""`memctl dify onboard` honours the indexing technique asked for (issue 14, finding 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Dify, configure, memctl

pytestmark = pytest.mark.integration


def test_onboard_honours_the_indexing_technique_setting(
    tmp_path: Path, dify: Dify, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = configure(tmp_path / "p", slots=["fresh"], embedding_model="none")  # type: ignore[arg-type]
    password = tmp_path / "admin-password"
    password.write_text("Passw0rd123\n")
    password.chmod(0o600)
    monkeypatch.setenv("MEMCTL_DIFY_INDEXING_TECHNIQUE", "economy")
    run = memctl(
        "dify", "onboard", "--url", dify.origin, "--email", "admin@example.com",
        "--password-file", str(password), "--key-file", str(dify.key_file),
        "--project", str(project), "--json",
    )  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.json["indexing_technique"] == "economy" and run.json["created_slots"] == ["fresh"]
    assert dify.app.state.dify.dataset_named("fresh").indexing_technique == "economy"
