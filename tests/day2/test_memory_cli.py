"""`memctl search|show|edit|forget|lessons` on a project's real embedded stores."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import Dify, configure, memctl
from .stores import documents, entry_records, seed_documents, seed_entries, set_marks, stamp_recall

LESSON = {"atom_type": "self-improvement-lesson", "project_module": "api", "task_type": "bugfix"}
LORE = {"atom_type": "project-lore"}
DOCS = [
    ("knowledge", "deploy.md", "Deploys go through the blue/green switch.", LORE, True),
    ("knowledge", "n-004", "A document named like an entry.", {"atom_type": "reference"}, True),
    (
        "self_improvement",
        "lesson-timeout.md",
        "Retry with backoff.",
        {**LESSON, "error_pattern": "timeout"},
        True,
    ),
    (
        "self_improvement",
        "lesson-oom.md",
        "Stream, do not load.",
        {**LESSON, "error_pattern": "oom-kill"},
        True,
    ),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    seed_entries(tmp_path, 5)
    seed_documents(tmp_path, DOCS)
    return tmp_path


def run(project: Path, *args: str, input: str | None = None):  # type: ignore[no-untyped-def]
    return memctl(*args, "--project", str(project), input=input)


def doc_id(project: Path, name: str) -> str:
    shown = run(project, "show", name, "--json")
    assert shown.code == 0, shown.stderr
    return str(shown.json["document_id"])


# -- search ----------------------------------------------------------------------------------


def test_search_ranks_entries_and_documents_together(project: Path) -> None:
    found = run(project, "search", "deploy blue green", "--json")
    assert found.code == 0
    assert found.json["hits"][0]["where"] == "knowledge/deploy.md"
    assert found.json["hits"][0]["kind"] == "document" and found.json["hits"][0]["score"] > 0
    mixed = run(project, "search", "learned", "--json").json["hits"]
    assert mixed[0]["kind"] == "entry" and mixed[0]["where"] == "entry " + mixed[0]["id"]
    both = run(project, "search", "n-004", "--json").json["hits"]
    assert {h["ref"] for h in both} >= {"entry:n-004", f"doc:{doc_id(project, 'knowledge/n-004')}"}
    scores = [h["score"] for h in both]
    assert scores == sorted(scores, reverse=True)
    table = run(project, "search", "deploy")
    assert table.code == 0 and "deploy.md" in table.stdout and "score" in table.stdout


def test_search_says_nothing_matched_for_nonsense_and_what_to_try(project: Path) -> None:
    table = run(project, "search", "zqxv florp blarg")
    assert table.code == 0
    assert "Nothing matched" in table.stdout and "--best-effort" in table.stdout
    assert "deploy.md" not in table.stdout
    found = run(project, "search", "zqxv florp blarg", "--json")
    assert found.json["count"] == 0 and found.json["hits"] == [] and "Nothing matched" in found.json["hint"]


def test_search_finds_a_known_answer_with_a_relevance_in_0_1(project: Path) -> None:
    found = run(project, "search", "how do we switch production releases", "--json").json
    assert found["hits"][0]["where"] == "knowledge/deploy.md"
    assert all(0 <= h["score"] <= 1 and h["score"] >= found["threshold"] for h in found["hits"])


def test_search_honours_an_explicit_threshold(project: Path) -> None:
    assert run(project, "search", "deploy blue green", "--threshold", "0.9999", "--json").json["hits"] == []
    loose = run(project, "search", "deploy blue green", "--threshold", "0", "--json").json
    assert loose["threshold"] == 0 and len(loose["hits"]) > 1
    assert all("best_effort" not in h for h in loose["hits"])


def test_search_best_effort_shows_the_closest_hits_marked(project: Path) -> None:
    found = run(project, "search", "zqxv florp blarg", "--best-effort", "--json").json
    assert found["best_effort"] is True and found["hits"]
    assert all(h["best_effort"] is True and h["score"] < found["threshold"] for h in found["hits"])
    table = run(project, "search", "zqxv florp blarg", "--best-effort")
    assert "(best effort)" in table.stdout and "Nothing matched" not in table.stdout


def test_search_ranks_by_age_and_use_like_search_memory(tmp_path: Path) -> None:
    text = "Feature flags are read from the flags service at startup."
    flags = [("knowledge", name, text, LORE, True) for name in ("flags-a.md", "flags-b.md")]
    seed_documents(tmp_path, flags)

    def order() -> list[str]:
        found = run(tmp_path, "search", "feature flags startup", "--json")
        assert found.code == 0, found.stderr
        return [h["name"] for h in found.json["hits"]]

    assert order() == ["flags-a.md", "flags-b.md"]
    for day in (3, 2, 1):
        stamp_recall(tmp_path, "knowledge", "flags-b.md", time.time() - day * 86_400)
    assert order() == ["flags-b.md", "flags-a.md"]  # recalled lately: first, as search_memory ranks it
    configure(tmp_path, search_recall_weight="0")
    assert order() == ["flags-a.md", "flags-b.md"]  # the project's setting, not a fixed weight


def test_search_filters_by_slot_type_tag_and_limit(project: Path) -> None:
    lessons = run(project, "search", "retry backoff stream", "--slot", "self_improvement", "--json").json
    assert lessons["hits"] and all(h["slot"] == "self_improvement" for h in lessons["hits"])
    typed = run(project, "search", "deploy", "--type", "reference", "--json").json
    assert all(h["type"] == "reference" for h in typed["hits"])
    tagged = run(project, "search", "learned", "--tag", "nope", "--json").json
    assert tagged["count"] == 0
    assert run(project, "search", "learned", "--limit", "2", "--json").json["count"] == 2


def test_search_errors(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    bad_slot = run(project, "search", "x", "--slot", "nope", "--json")
    assert bad_slot.code == 7 and "nope" in bad_slot.json["message"]
    empty = tmp_path_factory.mktemp("empty")
    missing = memctl("search", "x", "--project", str(empty), "--json")
    assert missing.code == 3 and missing.json["error"] == "NotFound"
    assert not (empty / ".memory").exists()


# -- show ------------------------------------------------------------------------------------


def test_show_an_entry_with_its_history_as_diffs(project: Path) -> None:
    shown = run(project, "show", "entry:n-000", "--json")
    assert shown.code == 0
    data = shown.json
    assert data["id"] == "n-000" and data["revision"] == 2 and data["content"]["text"] == "v2"
    assert [v["revision"] for v in data["history"]] == [2, 1]
    assert "-What we learned about n-000.\n+v2" in data["history"][0]["diff"]
    assert data["history"][1]["diff"].startswith("--- (nothing)")
    text = run(project, "show", "n-000", "--history", "1")
    assert text.code == 0 and "+v2" in text.stdout and "revision 1" in text.stdout


def test_show_a_document_by_name_id_or_slot_path(project: Path) -> None:
    by_name = run(project, "show", "deploy.md", "--json").json
    assert by_name["slot"] == "knowledge" and by_name["content"]["atom_type"] == "project-lore"
    by_id = run(project, "show", f"doc:{by_name['document_id']}", "--json").json
    assert by_id == by_name
    assert run(project, "show", by_name["document_id"], "--json").json["name"] == "deploy.md"
    assert run(project, "show", "knowledge/deploy.md", "--json").json["name"] == "deploy.md"
    text = run(project, "show", "deploy.md")
    assert "blue/green" in text.stdout and "project-lore" in text.stdout


def test_show_a_document_says_when_it_was_recalled_and_how_maintenance_marked_it(project: Path) -> None:
    fresh = run(project, "show", "deploy.md", "--json").json
    assert (fresh["recall_count"], fresh["last_recalled_at"], fresh["marks"]) == (0, None, {})
    stamp_recall(project, "knowledge", "deploy.md", 1_790_000_000.0)
    set_marks(project, "knowledge", "deploy.md", {"stale": "true"})
    shown = run(project, "show", "deploy.md", "--json").json
    assert shown["recall_count"] == 1 and shown["last_recalled_at"].startswith("2026-09-21")
    assert shown["marks"] == {"stale": "true"}
    table = run(project, "show", "deploy.md").stdout
    assert "stale=true" in table and "recall_count" in table


def test_show_errors(project: Path) -> None:
    unknown = run(project, "show", "no-such-thing", "--json")
    assert unknown.code == 3 and unknown.json["error"] == "NotFound"
    assert run(project, "show", "entry:n-001").code == 3  # deleted
    ambiguous = run(project, "show", "n-004", "--json")
    assert ambiguous.code == 7
    assert "entry:n-004" in ambiguous.json["message"] and "doc:" in ambiguous.json["message"]


# -- edit ------------------------------------------------------------------------------------


def editor(tmp_path: Path, body: str) -> str:
    """An $EDITOR command: a script that runs `body` with `path` (the file) and `text` (its text)."""
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys, pathlib\npath = pathlib.Path(sys.argv[1])\ntext = path.read_text()\n"
        + textwrap.dedent(body)
    )
    return f"{sys.executable} {script}"


@pytest.fixture(autouse=True)
def no_editor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)


def test_edit_an_entry_saves_through_cas(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = """\
        assert oct(path.stat().st_mode & 0o777) == "0o600"
        path.write_text(text.replace("title: Note n-000", "title: Fixed").replace("\\nv2\\n", "\\nv3 ✓\\n"))
    """
    monkeypatch.setenv("EDITOR", editor(tmp_path_factory.mktemp("ed"), body))
    saved = run(project, "edit", "n-000", "--json")
    assert saved.code == 0, saved.stdout + saved.stderr
    assert saved.json["status"] == "updated"
    entry = entry_records(project)["n-000"]
    assert entry["entry"]["title"] == "Fixed" and entry["entry"]["body"] == "v3 ✓" and entry["revision"] == 3
    assert entry["entry"]["tags"] == ["ops", "release"] and entry["entry"]["source"] == "test"


def test_edit_without_change_writes_nothing(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VISUAL", editor(tmp_path_factory.mktemp("ed"), "path.write_text(text)\n"))
    before = entry_records(project)["n-000"]["revision"]
    saved = run(project, "edit", "entry:n-000")
    assert saved.code == 0 and "unchanged" in saved.stdout
    assert entry_records(project)["n-000"]["revision"] == before


def test_edit_a_document_metadata_and_text(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = """\
        text = text.replace("enabled: true", "enabled: false").replace("language: ''", "language: python")
        path.write_text(text.replace("blue/green", "canary"))
    """
    monkeypatch.setenv("EDITOR", editor(tmp_path_factory.mktemp("ed"), body))
    saved = run(project, "edit", "knowledge/deploy.md", "--json")
    assert saved.code == 0 and saved.json["status"] == "updated"
    text, metadata, enabled = documents(project)[("knowledge", "deploy.md")]
    assert text == "Deploys go through the canary switch."
    assert metadata["language"] == "python" and metadata["atom_type"] == "project-lore" and enabled is False


def test_edit_that_lost_a_race_is_a_conflict_and_keeps_the_edit(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = f"""\
        import anyio
        from memory_bridge import EntryWrite, load_settings
        from memory_bridge.stores import open_entry_store

        async def agent_writes():
            store = open_entry_store(load_settings(project=pathlib.Path({str(project)!r})))
            write = EntryWrite("n-000", "Agent title", "agent body", "decision", ("ops",), "agent", "app")
            await store.set(write, ttl=None, if_version=None, operation_id=None)
            await store.close()

        anyio.run(agent_writes)
        path.write_text(text.replace("\\nv2\\n", "\\nmy careful edit\\n"))
    """
    monkeypatch.setenv("EDITOR", editor(tmp_path_factory.mktemp("ed"), agent))
    lost = run(project, "edit", "n-000", "--json")
    assert lost.code == 4 and lost.json["error"] == "Conflict"
    message = lost.json["message"]
    assert "revision 2" in message and "revision 3" in message
    assert "title" in message and "text" in message and "tags" in message
    kept = Path(message.rsplit("kept in ", 1)[1])
    assert "my careful edit" in kept.read_text()
    assert oct(kept.stat().st_mode & 0o777) == "0o600"
    entry = entry_records(project)["n-000"]["entry"]
    assert entry["body"] == "agent body"  # the agent's write stands


def test_edit_a_document_changed_meanwhile_is_a_conflict(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = f"""\
        import anyio
        from memory_bridge import load_settings
        from memory_bridge.stores import DocMetadata, open_knowledge_store

        async def agent_writes():
            settings = load_settings(project=pathlib.Path({str(project)!r}))
            store = open_knowledge_store(settings)
            meta = DocMetadata(atom_type="project-lore", scope=settings.project_scope)
            await store.upsert("knowledge", "deploy.md", "Agent rewrote it.", meta, origin="agent")
            await store.close()

        anyio.run(agent_writes)
        path.write_text(text.replace("blue/green", "canary"))
    """
    monkeypatch.setenv("EDITOR", editor(tmp_path_factory.mktemp("ed"), agent))
    lost = run(project, "edit", "deploy.md")
    assert lost.code == 4 and "changed meanwhile" in lost.stderr and "text" in lost.stderr
    assert documents(project)[("knowledge", "deploy.md")][0] == "Agent rewrote it."


def test_edit_errors(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_editor = run(project, "edit", "n-000", "--json")
    assert no_editor.code == 2 and "EDITOR" in no_editor.json["message"]
    ed = tmp_path_factory.mktemp("ed")
    monkeypatch.setenv("EDITOR", editor(ed, "path.write_text(text.replace('id: n-000', 'id: n-002'))\n"))
    assert run(project, "edit", "n-000").code == 7
    bad_type = "path.write_text(text.replace('type: decision', 'type: 9bad'))\n"
    monkeypatch.setenv("EDITOR", editor(ed, bad_type))
    invalid = run(project, "edit", "n-000", "--json")
    assert invalid.code == 7 and invalid.json["message"].startswith("type:")
    monkeypatch.setenv("EDITOR", editor(ed, "path.write_text('no front matter')\n"))
    assert run(project, "edit", "n-000").code == 7
    monkeypatch.setenv("EDITOR", editor(ed, "sys.exit(3)\n"))
    failed = run(project, "edit", "n-000", "--json")
    assert failed.code == 1 and "status 3" in failed.json["message"]
    assert run(project, "edit", "nope", "--json").code == 3
    assert entry_records(project)["n-000"]["revision"] == 2


def test_invalid_edit_reopens_the_editor_with_the_problem_on_top(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: invalid YAML (or a bad field) ended the edit; the editor now opens again,
    the problem as comment lines above the user's own text, until the file is valid."""
    ed, seen = tmp_path_factory.mktemp("ed"), tmp_path_factory.mktemp("seen")
    body = f"""\
        seen = pathlib.Path({str(seen)!r})
        opened = len(list(seen.iterdir()))  # what the editor was shown each time, kept here
        (seen / f"{{opened}}.md").write_text(text)
        if opened == 0:
            path.write_text(text.replace("title: Note n-000", "title: [unclosed"))
        elif opened == 1:
            text = text.replace("title: [unclosed", "title: Fixed")
            path.write_text(text.replace("type: decision", "type: 9"))
        else:
            path.write_text(text.replace("type: 9", "type: decision"))
    """
    monkeypatch.setenv("EDITOR", editor(ed, body))
    saved = run(project, "edit", "n-000", "--json")
    assert saved.code == 0, saved.stdout + saved.stderr
    assert saved.json["status"] == "updated"
    second, third = ((seen / f"{n}.md").read_text() for n in (1, 2))
    assert second.startswith("# memctl did not save this edit:\n") and "not valid YAML" in second
    assert "title: [unclosed" in second, "the user's own text is kept below the problem"
    assert third.startswith("# memctl did not save this edit:\n# type: ") and "title: Fixed" in third
    assert len(list(seen.iterdir())) == 3
    entry = entry_records(project)["n-000"]
    assert (
        entry["entry"]["title"] == "Fixed" and entry["entry"]["type"] == "decision" and entry["revision"] == 3
    )


def test_an_invalid_edit_saved_unchanged_or_emptied_gives_up_and_writes_nothing(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    ed = tmp_path_factory.mktemp("ed")
    monkeypatch.setenv(
        "EDITOR", editor(ed, "path.write_text(text.replace('type: decision', 'type: 9bad'))\n")
    )
    unchanged = run(project, "edit", "n-000", "--json")
    assert unchanged.code == 7 and unchanged.json["message"].startswith("type:")
    kept = Path(unchanged.json["message"].rsplit("kept in ", 1)[1])
    assert "type: 9bad" in kept.read_text()
    body = """\
        if text.startswith("#"):
            path.write_text("# only comments\\n\\n")
        else:
            path.write_text(text.replace("type: decision", "type: 9bad"))
    """
    monkeypatch.setenv("EDITOR", editor(ed, body))
    emptied = run(project, "edit", "n-000", "--json")
    assert emptied.code == 1 and "left empty" in emptied.json["message"]
    assert entry_records(project)["n-000"]["revision"] == 2


# -- forget ----------------------------------------------------------------------------------


def test_forget_with_yes_deletes_an_entry_and_a_document(project: Path) -> None:
    gone = run(project, "forget", "entry:n-002", "--yes", "--json")
    assert gone.code == 0 and gone.json["action"] == "deleted"
    assert entry_records(project)["n-002"]["entry"] is None
    doc = run(project, "forget", "knowledge/deploy.md", "--yes")
    assert doc.code == 0 and "deleted" in doc.stdout
    assert ("knowledge", "deploy.md") not in documents(project)


def test_forget_disable_keeps_a_document_out_of_search(project: Path) -> None:
    done = run(project, "forget", "deploy.md", "--disable", "--yes", "--json")
    assert done.code == 0 and done.json["action"] == "disabled"
    assert documents(project)[("knowledge", "deploy.md")][2] is False
    hits = run(project, "search", "blue green", "--json").json["hits"]
    assert "knowledge/deploy.md" not in {h["where"] for h in hits}


def test_forget_refuses_without_a_terminal_or_yes(project: Path) -> None:
    before = {id: r["revision"] for id, r in entry_records(project).items()}
    refused = run(project, "forget", "entry:n-000", "--json")
    assert refused.code == 2 and "--yes" in refused.json["message"]
    assert run(project, "forget", "entry:n-000", input="y\n").code == 2
    assert run(project, "forget", "entry:n-000", "--disable", "--yes").code == 7
    assert run(project, "forget", "nope", "--yes", "--json").code == 3
    assert {id: r["revision"] for id, r in entry_records(project).items()} == before


def test_forget_asks_on_a_terminal(project: Path) -> None:
    def forget(answer: bytes) -> tuple[int, str]:
        main, child = os.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "memctl", "forget", "entry:n-000", "--project", str(project)],
            stdin=child,
            stdout=child,
            stderr=child,
        )
        os.close(child)
        os.write(main, answer)
        output = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        os.close(main)
        return proc.wait(timeout=60), output.decode(errors="replace")

    code, output = forget(b"n\n")
    assert code == 2 and "delete entry:n-000 (Note n-000)?" in output
    assert entry_records(project)["n-000"]["entry"] is not None
    code, output = forget(b"y\n")
    assert code == 0, output
    assert entry_records(project)["n-000"]["entry"] is None


# -- lessons ---------------------------------------------------------------------------------


def test_lessons_by_error_pattern(project: Path) -> None:
    listed = run(project, "lessons", "--json")
    assert listed.code == 0
    patterns = [lesson["error_pattern"] for lesson in listed.json["lessons"]]
    assert patterns == ["oom-kill", "timeout"]
    assert all(lesson["recall_count"] == 0 for lesson in listed.json["lessons"])
    assert all(lesson["last_recalled"] is None for lesson in listed.json["lessons"])
    only = run(project, "lessons", "--pattern", "TIME", "--sort", "recent", "--json").json
    assert [lesson["name"] for lesson in only["lessons"]] == ["lesson-timeout.md"]
    table = run(project, "lessons")
    assert table.code == 0 and "timeout" in table.stdout and "-" in table.stdout


def test_lessons_show_how_often_and_when_each_was_recalled(project: Path) -> None:
    for when in (1_790_000_000.0, 1_790_100_000.0):
        stamp_recall(project, "self_improvement", "lesson-timeout.md", when)
    listed = run(project, "lessons", "--json").json["lessons"]
    assert [(x["error_pattern"], x["recall_count"]) for x in listed] == [("timeout", 2), ("oom-kill", 0)]
    assert listed[0]["last_recalled"].startswith("2026-09-22")
    table = run(project, "lessons").stdout
    timeout_row = next(line for line in table.splitlines() if "timeout" in line)
    assert " 2 " in timeout_row and "2026-09" in timeout_row, "the table folds narrow columns"


def test_lessons_of_a_project_without_memory(tmp_path: Path) -> None:
    assert memctl("lessons", "--project", str(tmp_path), "--json").code == 3


def test_a_secret_typed_into_an_edit_is_redacted(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "ghp_" + "a1B2" * 9
    ed = tmp_path_factory.mktemp("ed")
    monkeypatch.setenv("EDITOR", editor(ed, f"path.write_text(text.replace('blue/green', {secret!r}))\n"))
    assert run(project, "edit", "deploy.md").code == 0
    stored = documents(project)[("knowledge", "deploy.md")][0]
    assert stored == "Deploys go through the ghp_[REDACTED] switch."
    monkeypatch.setenv("EDITOR", editor(ed, f"path.write_text(text.replace('\\nv2\\n', '\\n{secret}\\n'))\n"))
    assert run(project, "edit", "n-000").code == 0
    assert entry_records(project)["n-000"]["entry"]["body"] == "ghp_[REDACTED]"
    shown = run(project, "show", "n-000", "--history", "3")
    assert secret not in shown.stdout


@pytest.mark.integration
def test_the_commands_on_valkey_and_dify(
    tmp_path: Path,
    valkey_url: str,
    dify: Dify,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = configure(
        tmp_path / "p", entry_store=valkey_url, knowledge_store=dify.url, dify_api_key_file=str(dify.key_file)
    )
    seed_entries(project, 3)
    seed_documents(project, DOCS[:1])
    found = run(project, "search", "switch", "--json")
    assert found.code == 0 and "knowledge/deploy.md" in {h["where"] for h in found.json["hits"]}, found.stdout
    shown = run(project, "show", "n-000", "--json").json
    assert shown["revision"] == 2 and "+v2" in shown["history"][0]["diff"]
    assert run(project, "show", "knowledge/deploy.md", "--json").json["name"] == "deploy.md"

    ed = tmp_path_factory.mktemp("ed")
    monkeypatch.setenv("EDITOR", editor(ed, "path.write_text(text.replace('blue/green', 'canary'))\n"))
    assert run(project, "edit", "deploy.md").code == 0
    assert documents(project)[("knowledge", "deploy.md")][0] == "Deploys go through the canary switch."
    monkeypatch.setenv("EDITOR", editor(ed, "path.write_text(text.replace('\\nv2\\n', '\\nv3\\n'))\n"))
    assert run(project, "edit", "n-000").code == 0
    assert entry_records(project)["n-000"]["entry"]["body"] == "v3"

    out = tmp_path / "out"
    assert run(project, "export", "--markdown", str(out), "--json").json["files"] == 3 + 1
    again = run(project, "import", "--markdown", str(out), "--json")
    assert again.code == 0 and again.json["unchanged"] == 4
    assert run(project, "forget", "deploy.md", "--disable", "--yes").code == 0
    assert documents(project)[("knowledge", "deploy.md")][2] is False
