"""Issue 33 on a real Dify: a document overwritten and deleted comes back at its first
version through `memctl history` and `memctl rollback`, found and searchable again. Dify
keeps no versions: the bridge's log in `.memory/dify-versions.db` does."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner, Result

from memctl.cli import cli
from memory_bridge import load_settings
from memory_bridge.stores import DocMetadata, KnowledgeFilter, open_knowledge_store

from ..real_dify import RealDify, delete_datasets, real_dify_release, unique_prefix

pytestmark = pytest.mark.real_dify

CURATED = "Deploys go through the blue/green switch. Roll back with make rollback."
BAD = "Deploys go straight to production on Fridays."


def project_on(real_dify: RealDify, root: Path, prefix: str) -> Path:
    (root / ".memory").mkdir(parents=True)
    key_file = root / "dify-key"
    key_file.write_text(real_dify.api_key + "\n")
    key_file.chmod(0o600)
    settings = {
        "knowledge_store": f"dify+{real_dify.url}/v1",
        "dify_api_key_file": str(key_file),
        "dify_dataset_prefix": prefix,
        "dify_indexing_technique": "economy",
        "embedding_model": "none",
        "slots": ["knowledge"],
    }
    (root / ".memory" / "config.toml").write_text(
        "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
    )
    return root


def memctl(project: Path, *args: str) -> Result:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "MEMORY_MCP_", "DIFY_"))}
    return CliRunner().invoke(cli, [*args, "--project", str(project)], env=env)


def test_a_document_overwritten_and_deleted_on_real_dify_comes_back(
    real_dify: RealDify, tmp_path: Path
) -> None:
    prefix = unique_prefix()
    project = project_on(real_dify, tmp_path / "app", prefix)
    settings = load_settings(project=project)
    print(f"real Dify {real_dify_release(real_dify.url)}")

    async def write() -> None:
        store = open_knowledge_store(settings)
        meta = DocMetadata(atom_type="project-lore", scope=settings.project_scope)
        try:
            await store.create_slot("knowledge")
            await store.upsert("knowledge", "deploy.md", CURATED, meta, origin="test")
            bad = await store.upsert("knowledge", "deploy.md", BAD, meta, origin="test")
            await store.delete("knowledge", bad.document_id)
        finally:
            await store.close()

    async def found() -> tuple[str | None, list[str]]:
        store = open_knowledge_store(settings)
        try:
            doc = await store.find("knowledge", "deploy.md")
            page = await store.search(
                ["knowledge"],
                "blue/green switch",
                KnowledgeFilter(),
                top_k=5,
                score_threshold=None,
                mode="keyword",
            )
            return (doc.text if doc else None), [hit.document_name for hit in page.hits]
        finally:
            await store.close()

    try:
        anyio.run(write)
        shown = memctl(project, "history", "knowledge/deploy.md", "--json")
        assert shown.exit_code == 0, shown.output
        versions = json.loads(shown.stdout)["versions"]
        assert [(v["version"], v["change"]) for v in versions] == [
            (3, "deleted"),
            (2, "updated"),
            (1, "created"),
        ]
        assert versions[2]["text"] == CURATED and versions[0]["text"] == BAD  # the deletion holds BAD

        back = memctl(project, "rollback", "knowledge/deploy.md", "--to", "1", "--yes", "--json")
        assert back.exit_code == 0, back.output
        assert json.loads(back.stdout)["undeleted"] is True

        deadline = time.monotonic() + 120  # economy indexing runs in Dify's worker
        text, names = anyio.run(found)
        while "deploy.md" not in names and time.monotonic() < deadline:
            time.sleep(2)
            text, names = anyio.run(found)
        assert text is not None and text.split() == CURATED.split()
        assert "deploy.md" in names
        latest = json.loads(memctl(project, "history", "deploy.md", "--json").stdout)["versions"][0]
        assert (latest["version"], latest["change"], latest["restored_from"]) == (4, "restored", 1)
    finally:
        delete_datasets(real_dify, prefix)
