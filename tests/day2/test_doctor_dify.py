"""`memctl doctor` names the Dify release a project's knowledge store talks to, and whether
it is inside the range memctl is tested on (issue 37)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Dify, configure, memctl

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("version", "status"), [("1.16.1", "ok"), ("1.14.2", "ok"), ("1.13.3", "warn")])
def test_doctor_reports_the_dify_version_and_the_tested_range(
    tmp_path: Path, dify: Dify, version: str, status: str
) -> None:
    dify.app.state.dify.version = version
    project = configure(
        tmp_path / "p", knowledge_store=dify.url, dify_api_key_file=str(dify.key_file), embedding_model="none"
    )
    report = memctl("doctor", "--project", str(project), "--json")
    [check] = [c for c in report.json["checks"] if c["name"] == "dify version"]
    assert check["status"] == status
    assert f"Dify {version}" in check["detail"] and "1.14 to 1.16" in check["detail"]
