"""Docs that code can tell are generated and current; hand-written docs cover every tool."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from memory_bridge import ENTRY_TOOLS

ROOT = Path(__file__).resolve().parents[2]


def test_generated_reference_docs_are_current() -> None:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    gen_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_docs)
    assert gen_docs.main(check=True) == 0, "run: uv run python scripts/gen_docs.py"


def test_readme_and_compatibility_notes_name_every_entry_tool() -> None:
    readme = (ROOT / "README.md").read_text()
    for tool in ENTRY_TOOLS:
        assert f"`{tool}`" in readme
    assert "memory-mcp-compatibility.md" in readme


def test_knowledge_docs_describe_every_knowledge_tool() -> None:
    from memory_bridge import KNOWLEDGE_TOOLS

    text = (ROOT / "docs" / "knowledge.md").read_text() + (ROOT / "README.md").read_text()
    missing = [tool for tool in KNOWLEDGE_TOOLS if f"`{tool}`" not in text]
    assert missing == []


def test_readme_quick_start_says_what_the_test_command_installs_and_how_to_stop_it() -> None:
    readme = (ROOT / "README.md").read_text()
    quick_start = readme[readme.index("## Quick start") : readme.index("## Serving memory")]
    scripts = "".join((ROOT / "scripts" / name).read_text() for name in ("test", "ensure-docker.sh"))
    for installed in (
        "redis-server",
        "chromium-driver",
        "docker.io",
        "debootstrap",
        "dockerd",
        "conformance",
    ):
        assert installed in scripts, f"scripts/test no longer installs {installed}: update this test"
    for named in (
        "redis-server",
        "chromium-driver",
        "docker.io",
        "debootstrap",
        "Docker engine",
        "Node 22",
        "conformance",
    ):
        assert named in quick_start, f"the quick start does not say that scripts/test installs {named}"
    assert "kill" in quick_start and "docker.pid" in quick_start, "how to stop the engine it started"


def test_architecture_page_names_only_paths_that_exist() -> None:
    """docs/architecture.md tells a newcomer where things go: every repository path it names
    (in backticks, from a top-level directory) must still be there."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    top = ("bridge/", "ctl/", "roles/", "templates/", "playbooks/", "collections/", "tests/", "scripts/")
    named = [token for token in re.findall(r"`([^`\s]+)`", text) if token.startswith(top)]
    assert len(named) >= 10, "the page names the places a change goes"
    missing = [path for path in named if not (ROOT / path.split("<", 1)[0]).exists()]
    assert missing == []
