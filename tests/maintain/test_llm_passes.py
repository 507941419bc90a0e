"""`memctl maintain`'s LLM passes through the CLI on the embedded store and the Dify
emulator (semantic search by the same model), with the fake `claude` CLI as the loopback
LLM (scripted replies, recorded prompts): near-duplicates merged and undone, stale lessons
rewritten, archived or kept, an invalid answer keeps the document, no provider skips both
passes with a line, --dry-run asks nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result

from memctl.cli import cli
from memory_bridge import load_settings
from memory_bridge.core import redact
from memory_bridge.maintenance import maintain_dir
from memory_bridge.stores import DocMetadata, KnowledgeStore

from ..bridges import bridge_env
from ..capture.fakes import FakeCli, install_fake
from .stores import KINDS, Opener, knowledge_opener, with_store

SECRET = "ghp_" + "A1b2" * 9
SLOTS = ["knowledge", "self_improvement"]
MERGE = "llm-merge-near-duplicates"
REFRESH = "llm-semantic-refresh"
OLD = (
    "# Run migrations before tests\n\nRun the database migrations before running the test suite.\n"
    "Why: the tests fail on a stale schema.\nHow to apply: run make migrate first."
)
NEW = (
    "# Run the migrations before the tests\n\nAlways run the database migrations before you run the test "
    "suite.\nWhy: a stale schema makes the tests fail.\nHow to apply: make migrate, then the tests."
)
OTHER = (
    "# Cache keys need the tenant\n\nThe cache key lacked the tenant id, so tenants saw each other's data.\n"
    "Why: the cache is shared.\nHow to apply: put the tenant in every key."
)
LESSONS = {
    "retry.md": "# Retry the flaky upload once\n\nThe S3 upload times out on the first try in CI.",
    "pin.md": "# Pin the node version\n\nThe build broke when CI moved to node 22.",
    "lint.md": "# Run the linter before committing\n\nThe pre-commit hook misses generated files.",
    "tz.md": "# Store times in UTC\n\nA report showed local times an hour off after the DST change.",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / ".memory").mkdir(parents=True)
    return root


@pytest.fixture(params=KINDS[:2])  # the real Dify's datasets are economy: no vectors to merge by
def opener(
    request: pytest.FixtureRequest, project: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Opener]:
    with knowledge_opener(request, monkeypatch, load_settings(project=project), SLOTS) as open_:
        yield open_


@pytest.fixture
def claude(tmp_path: Path) -> FakeCli:
    return install_fake(tmp_path / "bin", "claude")


def seed(opener: Opener, project: Path, slot: str, docs: dict[str, str], atom_type: str) -> dict[str, str]:
    """Save `docs` (name -> text) one second apart (the later is the newer); name -> id."""

    async def work(store: KnowledgeStore) -> dict[str, str]:
        ids = {}
        for name, text in docs.items():
            meta = DocMetadata(scope=project.name, atom_type=atom_type, tags=("ops",))
            ids[name] = (await store.upsert(slot, name, text, meta, origin="test")).document_id
            await anyio.sleep(1.1)
        return ids

    result: dict[str, str] = with_store(opener, SLOTS, work)
    return result


def snapshot(opener: Opener) -> dict[str, tuple[Any, ...]]:
    """Every document: name, text, metadata, origin, enabled, marks (by id)."""

    async def work(store: KnowledgeStore) -> dict[str, tuple[Any, ...]]:
        docs = {}
        for slot in SLOTS:
            page, _ = await store.list_documents(slot, offset=0, limit=1000)
            docs.update({d.id: (d.name, d.text, d.metadata, d.origin, d.enabled, d.marks) for d in page})
        return docs

    result: dict[str, tuple[Any, ...]] = with_store(opener, SLOTS, work)
    return result


def maintain(project: Path, claude: FakeCli | None, *args: str, **env: str) -> tuple[Result, dict[str, Any]]:
    provider = {"MEMCTL_CAPTURE_PROVIDER": env.pop("MEMCTL_CAPTURE_PROVIDER", "none")}
    if claude is not None:
        provider = {
            "MEMCTL_CAPTURE_PROVIDER": "claude",
            "MEMCTL_CAPTURE_COMMAND": str(claude.bin_dir / "claude"),
            "MEMCTL_CAPTURE_RETRIES": "0",
        }
    result = CliRunner().invoke(
        cli, ["maintain", "--project", str(project), "--json", *args], env=bridge_env(**provider, **env)
    )
    return result, json.loads(result.stdout)


def words(text: str) -> list[str]:
    """A text's words as either store reads it back (Dify drops a heading's `#`)."""
    return [w for w in text.split() if w != "#"]


def reply(**answer: Any) -> dict[str, Any]:
    return {"text": json.dumps(answer)}


def test_near_duplicates_are_merged_by_the_llm_and_undone(
    project: Path, opener: Opener, claude: FakeCli
) -> None:
    ids = seed(
        opener, project, "knowledge", {"old.md": OLD, "new.md": NEW, "other.md": OTHER}, "pattern-gotcha"
    )
    before = snapshot(opener)
    merged = NEW + f"\nAlso: CI runs make migrate itself with {SECRET}."
    claude.script(
        reply(
            action="merge", keeper_id=ids["new.md"], loser_id=ids["old.md"], merged_text=merged, reason="same"
        )
    )

    result, report = maintain(project, claude, "--passes", MERGE)

    assert result.exit_code == 0, result.output
    assert report["steps"] == [report["steps"][0] | {"name": MERGE, "outcome": "ok", "detail": "1 merged"}]
    [action] = report["actions"][MERGE]
    assert action | {"score": 0} == {
        "action": "merged",
        "slot": "knowledge",
        "documentId": ids["old.md"],
        "name": "old.md",
        "keeper": ids["new.md"],
        "keeperName": "new.md",
        "score": 0,
        "reason": "same",
    }
    assert action["score"] >= 0.92
    [call] = claude.calls()  # the distinct document is never asked about
    prompt = call["stdin"]
    assert "near-duplicates" in prompt and ids["old.md"] in prompt and ids["new.md"] in prompt
    assert ids["other.md"] not in prompt
    after = snapshot(opener)
    loser, keeper = after[ids["old.md"]], after[ids["new.md"]]
    assert loser[4] is False and loser[5]["superseded_by"] == ids["new.md"]
    assert loser[5]["consolidated_at"] == keeper[5]["consolidated_at"]
    assert words(keeper[1]) == words(redact(merged)) and keeper[4] is True
    assert keeper[2] == before[ids["new.md"]][2]
    assert SECRET not in keeper[1], "the LLM's text is redacted like every write"
    assert after[ids["other.md"]] == before[ids["other.md"]]

    undone, restored = maintain(project, None, "--undo", report["run_id"])
    assert undone.exit_code == 0, undone.output
    assert restored["restored"] == 2
    assert snapshot(opener) == before


def test_dedupe_by_similarity_lists_the_pairs_and_writes_nothing(project: Path, opener: Opener) -> None:
    ids = seed(
        opener, project, "knowledge", {"old.md": OLD, "new.md": NEW, "other.md": OTHER}, "pattern-gotcha"
    )
    before = snapshot(opener)

    result, report = maintain(project, None, "--passes", "dedupe-by-similarity")  # no LLM needed

    assert result.exit_code == 0, result.output
    [step] = report["steps"]
    assert (step["name"], step["outcome"], step["detail"]) == ("dedupe-by-similarity", "ok", "1 flagged")
    [flagged] = report["actions"]["dedupe-by-similarity"]
    assert (flagged["documentId"], flagged["keeper"]) == (ids["old.md"], ids["new.md"])
    assert flagged["score"] >= 0.92
    assert snapshot(opener) == before


@pytest.mark.parametrize("opener", ["sqlite"], indirect=True)  # the judge is the same on every store
@pytest.mark.parametrize(
    "answer",
    [
        pytest.param({"action": "keep", "reason": "distinct"}, id="keep"),
        pytest.param({"text": "Sure! Both look similar to me."}, id="not-json"),
        pytest.param({"action": "merge", "merged_text": "x", "swap": True}, id="other-ids"),
        pytest.param({"action": "merge", "merged_text": " \n "}, id="blank-text"),
    ],
)
def test_a_kept_pair_or_an_invalid_answer_changes_nothing(
    project: Path, opener: Opener, claude: FakeCli, answer: dict[str, Any]
) -> None:
    ids = seed(opener, project, "knowledge", {"old.md": OLD, "new.md": NEW}, "pattern-gotcha")
    before = snapshot(opener)
    if "text" in answer:
        claude.script(answer)
    else:
        keeper, loser = (
            (ids["old.md"], ids["new.md"]) if answer.pop("swap", False) else (ids["new.md"], ids["old.md"])
        )
        claude.script(reply(**answer, keeper_id=keeper, loser_id=loser))

    result, report = maintain(project, claude, "--passes", MERGE)

    assert result.exit_code == 0, result.output
    assert report["steps"][0]["detail"] == "1 kept"
    [action] = report["actions"][MERGE]
    expected = "distinct" if answer.get("action") == "keep" else "invalid answer: "
    assert action["reason"].startswith(expected)
    assert snapshot(opener) == before
    assert not (maintain_dir(project) / "undo").exists()


@pytest.mark.parametrize("opener", KINDS, indirect=True)  # refresh needs no vectors: the real Dify too
def test_stale_lessons_are_rewritten_archived_or_kept_and_undone(
    request: pytest.FixtureRequest, project: Path, opener: Opener, claude: FakeCli, a_year_later: None
) -> None:
    ids = seed(opener, project, "self_improvement", LESSONS, "feedback-rule")
    before = snapshot(opener)
    answers = {
        "retry.md": {
            "action": "rewrite",
            "rewritten_text": "# Retry uploads\n\nRetry once.",
            "stale_after": False,
        },
        "pin.md": {"action": "archive", "stale_after": True, "reason": "node is pinned in .nvmrc now"},
        "lint.md": {"action": "keep", "stale_after": False},
        "tz.md": {"action": "rewrite", "stale_after": False},  # a rewrite without its text: invalid
    }
    order = sorted(ids, key=lambda name: ids[name])  # never recalled: asked in id order
    claude.script(*(reply(document_id=ids[name], **answers[name]) for name in order))

    result, report = maintain(project, claude, "--passes", REFRESH)

    assert result.exit_code == 0, result.output
    assert report["steps"][0]["detail"] == "1 archived, 2 kept, 1 rewritten"
    asked = [json.loads(c["stdin"].split("\n---\n", 1)[1])["document"]["documentId"] for c in claude.calls()]
    assert asked == [ids[name] for name in order]
    after = snapshot(opener)
    rewritten, archived, kept, unsure = (after[ids[n]] for n in ("retry.md", "pin.md", "lint.md", "tz.md"))
    assert words(rewritten[1]) == ["Retry", "uploads", "Retry", "once."] and rewritten[4] is True
    assert set(rewritten[5]) == {"last_refreshed_at", "consolidated_at"}
    assert archived[4] is False and archived[5]["stale"] == "true" and "consolidated_at" in archived[5]
    assert kept[1] == before[ids["lint.md"]][1] and set(kept[5]) == {"last_refreshed_at"}
    assert unsure[:5] == before[ids["tz.md"]][:5] and unsure[5] == {"stale": "true"}
    reasons = {a["name"]: a["reason"] for a in report["actions"][REFRESH]}
    assert reasons["tz.md"].startswith("invalid answer: ") and "rewritten_text" in reasons["tz.md"]

    # a document the LLM found current is not stale again; the unsure one stays flagged
    again, flagged = maintain(project, claude, "--passes", "staleness-flag")
    assert again.exit_code == 0 and flagged["steps"][0]["detail"] == "nothing to do"

    if request.node.callspec.params["opener"] == "real-dify":
        return  # undo enables the lesson just archived: Dify 1.14.2's status race (see test_passes.py)
    undone, restored = maintain(project, None, "--undo", report["run_id"])
    assert undone.exit_code == 0 and restored["restored"] == 4
    assert snapshot(opener) == before


def test_a_dry_run_lists_what_it_would_ask_and_asks_nothing(
    project: Path, opener: Opener, claude: FakeCli, a_year_later: None
) -> None:
    ids = seed(opener, project, "knowledge", {"old.md": OLD, "new.md": NEW}, "pattern-gotcha")
    before = snapshot(opener)

    result, report = maintain(project, claude, "--passes", f"{MERGE},{REFRESH}", "--dry-run")

    assert result.exit_code == 0, result.output
    details = {s["name"]: (s["outcome"], s["detail"]) for s in report["steps"]}
    assert details == {MERGE: ("dry-run", "would: 1 asked"), REFRESH: ("dry-run", "would: 2 asked")}
    [pair] = report["actions"][MERGE]
    assert (pair["documentId"], pair["keeper"]) == (ids["old.md"], ids["new.md"])
    assert claude.calls() == []
    assert snapshot(opener) == before


@pytest.mark.parametrize("opener", ["sqlite"], indirect=True)  # the judge is the same on every store
def test_without_a_provider_the_llm_passes_are_skipped_and_the_rest_run(
    project: Path, opener: Opener, a_year_later: None
) -> None:
    seed(opener, project, "knowledge", {"old.md": OLD, "new.md": NEW}, "pattern-gotcha")
    passes = f"dedupe-by-sha256,{MERGE},staleness-flag,{REFRESH}"

    result, report = maintain(project, None, "--passes", passes)

    assert result.exit_code == 0, result.output
    steps = {s["name"]: (s["outcome"], s["detail"]) for s in report["steps"]}
    skipped = ("skipped", "no LLM: capture is off (capture_provider = none); nothing asked or changed")
    assert steps == {
        "dedupe-by-sha256": ("ok", "nothing to do"),
        MERGE: skipped,
        "staleness-flag": ("ok", "2 flagged"),
        REFRESH: skipped,
    }
    text = CliRunner().invoke(
        cli,
        ["maintain", "--project", str(project), "--passes", MERGE],
        env=bridge_env(MEMCTL_CAPTURE_PROVIDER="none"),
    )
    assert text.exit_code == 0
    assert f"{MERGE}: skipped: no LLM: capture is off (capture_provider = none)" in text.output


@pytest.mark.parametrize("opener", ["sqlite"], indirect=True)  # the emulator always has its model
def test_without_an_embedding_model_the_merge_is_skipped_with_why(
    project: Path, opener: Opener, claude: FakeCli
) -> None:
    seed(opener, project, "knowledge", {"old.md": OLD, "new.md": NEW}, "pattern-gotcha")
    before = snapshot(opener)

    result, report = maintain(project, claude, "--passes", MERGE, MEMCTL_EMBEDDING_MODEL="none")

    assert result.exit_code == 0, result.output
    [step] = report["steps"]
    assert step["outcome"] == "skipped"
    assert (
        step["detail"]
        == "knowledge: near-duplicates are found by vectors, and the store has no embedding model"
    )
    assert claude.calls() == [] and snapshot(opener) == before


@pytest.mark.parametrize("opener", ["sqlite"], indirect=True)
def test_a_provider_that_cannot_be_used_fails_the_llm_passes_only(project: Path, opener: Opener) -> None:
    result, report = maintain(
        project, None, "--passes", f"{MERGE},staleness-flag", MEMCTL_CAPTURE_PROVIDER="anthropic"
    )

    assert result.exit_code == 1
    steps = {s["name"]: s for s in report["steps"]}
    assert steps[MERGE]["outcome"] == "failed" and "needs an API key" in steps[MERGE]["error"]
    assert steps["staleness-flag"]["outcome"] == "ok"
