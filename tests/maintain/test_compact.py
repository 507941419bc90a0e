"""`memctl maintain --passes compact-entries` through the CLI, on the embedded entry store and on
a real Valkey server: the link graph, `## Referenced by` blocks and stubs; a second run
changes nothing; --dry-run writes nothing; an agent's write between the census and the write
is kept (the compare-and-set is retried once on it); a spent budget, a census cut short and
a double conflict are reported with memory-mcp's exit codes; --undo restores the entries.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result

from memctl.cli import cli
from memctl.operations import _compact
from memory_bridge import Settings, load_settings
from memory_bridge.maintenance import strip_backlinks
from memory_bridge.stores import Entry, EntryStore, EntryWrite, open_entry_store

from ..bridges import bridge_env
from ..servers import RunningServer, run_server, valkey_server_binary

MARKER = "<!-- managed by memctl maintain (compact-entries): rewritten on each run -->"


@pytest.fixture(scope="module")
def valkey_server() -> Iterator[RunningServer]:
    with run_server(valkey_server_binary()) as server:
        yield server


@pytest.fixture(params=["sqlite", "valkey"])
def env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The job's environment: the embedded entry store, or a real Valkey (emptied first)."""
    if request.param == "sqlite":
        return bridge_env()
    server: RunningServer = request.getfixturevalue("valkey_server")
    server.client(3).flushdb()
    return bridge_env(MEMCTL_ENTRY_STORE=f"valkey://127.0.0.1:{server.port}/3")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / ".memory").mkdir(parents=True)
    return root


def settings_of(project: Path, env: dict[str, str]) -> Settings:
    return load_settings(project=project, entry_store=env.get("MEMCTL_ENTRY_STORE", "sqlite"))


def on_store(project: Path, env: dict[str, str], work: Callable[[EntryStore], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        store = open_entry_store(settings_of(project, env))
        try:
            return await work(store)
        finally:
            await store.close()

    return anyio.run(run)


def save(project: Path, env: dict[str, str], *entries: tuple[str, str, str]) -> None:
    async def work(store: EntryStore) -> None:
        for id, title, body in entries:
            write = EntryWrite(id, title, body, "decision", ("ops",), "test", "app")
            assert (await store.set(write, ttl=None, if_version=None, operation_id=None)).status == "applied"

    on_store(project, env, work)


def snapshot(project: Path, env: dict[str, str]) -> dict[str, tuple[Entry, int]]:
    """Every live entry and its revision, read without counting hits."""

    async def work(store: EntryStore) -> dict[str, tuple[Entry, int]]:
        found = {}
        async for batch in store.export_records():
            found |= {r.id: (r.entry, r.revision) for r in batch if r.entry is not None}
        return found

    result: dict[str, tuple[Entry, int]] = on_store(project, env, work)
    return result


def maintain(project: Path, env: dict[str, str], *args: str) -> tuple[Result, dict[str, Any]]:
    argv = ["maintain", "--project", str(project), "--json", *args]
    result = CliRunner().invoke(cli, argv, env=env)
    return result, json.loads(result.stdout)


def compact(project: Path, env: dict[str, str], *args: str) -> tuple[Result, dict[str, Any], dict[str, Any]]:
    result, report = maintain(project, env, "--passes", "compact-entries", *args)
    [step] = report["steps"]
    return result, report, step


GRAPH = (
    ("deploy:blue-green", "Blue/green deploys", "We switch traffic at the load balancer."),
    (
        "db:migrations",
        "Migrations first",
        "Run migrations before deploy:blue-green. See [[runbook:rollback]].",
    ),
    ("incident:2026-03", "March outage", "Caused by db:migrations; deploy:blue-green was fine.\n"),
    ("postgres", "Postgres", "A one-word id: linked only as [[postgres]], never by the word postgres."),
    ("notes:misc", "Misc", "Mentions postgres and deploy:blue-greenish and [[postgres]]."),
)


def test_compaction_writes_backlinks_and_stubs_and_a_second_run_changes_nothing(
    project: Path, env: dict[str, str]
) -> None:
    save(project, env, *GRAPH)
    before = snapshot(project, env)

    result, report, step = compact(project, env)

    assert result.exit_code == 0, result.output
    assert step["outcome"] == "ok" and step["exit_code"] == 0
    assert step["detail"] == "5 entries, 5 links: 3 backlinks, 1 stub"
    after = snapshot(project, env)
    blue = after["deploy:blue-green"][0].body
    assert blue == (
        "We switch traffic at the load balancer.\n\n## Referenced by\n\n"
        f"{MARKER}\n- `db:migrations`: Migrations first\n- `incident:2026-03`: March outage"
    )
    assert after["db:migrations"][0].body.endswith(f"{MARKER}\n- `incident:2026-03`: March outage")
    assert after["postgres"][0].body.endswith(f"{MARKER}\n- `notes:misc`: Misc")
    stub = after["runbook:rollback"][0]
    assert (stub.type, stub.tags, stub.source, stub.project) == ("stub", ("stub",), "memctl-maintain", "app")
    assert stub.body.endswith(f"{MARKER}\n- `db:migrations`: Migrations first")
    # only the block is new; entries nobody names are untouched
    assert strip_backlinks(blue) == (before["deploy:blue-green"][0].body, True)
    assert (
        after["notes:misc"] == before["notes:misc"]
        and after["incident:2026-03"] == before["incident:2026-03"]
    )
    assert after["deploy:blue-green"][0].title == before["deploy:blue-green"][0].title
    written = {(a["action"], a["id"]) for a in report["actions"]["compact-entries"]}
    assert written == {
        ("backlinks", "deploy:blue-green"),
        ("backlinks", "db:migrations"),
        ("backlinks", "postgres"),
        ("stub", "runbook:rollback"),
    }

    again, _, second = compact(project, env)
    assert again.exit_code == 0 and second["detail"] == "6 entries, 5 links: nothing to do"
    assert snapshot(project, env) == after


def test_a_dry_run_lists_the_writes_and_writes_nothing(project: Path, env: dict[str, str]) -> None:
    save(project, env, *GRAPH)
    before = snapshot(project, env)

    result, report, step = compact(project, env, "--dry-run")

    assert result.exit_code == 0, result.output
    assert step["outcome"] == "dry-run"
    assert step["detail"] == "would: 5 entries, 5 links: 3 backlinks, 1 stub"
    stub = next(a for a in report["actions"]["compact-entries"] if a["action"] == "stub")
    assert stub == {"action": "stub", "id": "runbook:rollback", "referencedBy": ["db:migrations"]}
    assert snapshot(project, env) == before


def test_an_entry_losing_its_last_reference_loses_its_block(project: Path, env: dict[str, str]) -> None:
    save(project, env, ("a:one", "One", "Plain."), ("b:two", "Two", "Names a:one."))
    assert compact(project, env)[0].exit_code == 0
    save(project, env, ("b:two", "Two", "Names nothing now."))

    result, _, step = compact(project, env)

    assert result.exit_code == 0 and step["detail"] == "2 entries, 0 links: 1 backlinks"
    assert snapshot(project, env)["a:one"][0].body == "Plain."


class _AgentInTheWay:
    """The job's entry store, with an agent writing the target entry just before the job's
    first `times` writes to it (between its census and its compare-and-set)."""

    def __init__(self, inner: EntryStore, target: str, times: int, *, delete: bool = False) -> None:
        self._inner, self._target, self._left, self._delete = inner, target, times, delete
        self.agent_bodies: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def set(self, write: EntryWrite, **kwargs: Any) -> Any:
        if write.id == self._target and self._left:
            self._left -= 1
            if self._delete:
                assert await self._inner.delete(write.id) is not None
                return await self._inner.set(write, **kwargs)
            body = f"Rewritten by an agent ({len(self.agent_bodies) + 1})."
            self.agent_bodies.append(body)
            agent = EntryWrite(write.id, "Agent's title", body, "decision", (), "agent", "app")
            assert (
                await self._inner.set(agent, ttl=None, if_version=None, operation_id=None)
            ).status == "applied"
        return await self._inner.set(write, **kwargs)


@pytest.mark.parametrize("times", [1, 2])
def test_an_agents_write_between_read_and_write_is_kept(
    project: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, times: int
) -> None:
    save(project, env, ("a:one", "One", "Plain."), ("b:two", "Two", "Names a:one."))
    stores: list[_AgentInTheWay] = []

    def opener(settings: Settings) -> Any:
        stores.append(_AgentInTheWay(open_entry_store(settings), "a:one", times))
        return stores[-1]

    monkeypatch.setattr(_compact, "open_entry_store", opener)

    result, report, step = compact(project, env)

    entry = snapshot(project, env)["a:one"][0]
    assert entry.title == "Agent's title" and entry.source == "agent"
    if times == 1:  # retried once, on the agent's version: its text stays, with the block
        assert result.exit_code == 0, result.output
        assert step["outcome"] == "ok"
        [action] = report["actions"]["compact-entries"]
        assert action == {"action": "backlinks", "id": "a:one", "referencedBy": ["b:two"], "retried": True}
        assert entry.body == f"Rewritten by an agent (1).\n\n## Referenced by\n\n{MARKER}\n- `b:two`: Two"
    else:  # a second conflict: the agent's write stands, the run says so
        assert result.exit_code == 1
        assert (step["outcome"], step["exit_code"]) == ("failed", 4)
        assert step["error"] == (
            "partial: a:one: changed by someone else twice during compaction; their version is kept"
        )
        assert entry.body == "Rewritten by an agent (2)."
        assert report["ok"] is False and report["error"].startswith("compact-entries: partial")


def test_a_spent_budget_stops_before_writing_and_the_next_run_goes_on(
    project: Path, env: dict[str, str]
) -> None:
    save(project, env, ("a:one", "One", "Plain."), ("b:two", "Two", "Names a:one and [[c:three]]."))
    before = snapshot(project, env)

    result, _, step = compact(project, env, "--compact-budget", "0")

    assert result.exit_code == 1
    assert (step["outcome"], step["exit_code"]) == ("failed", 2)
    assert step["error"].startswith("budget: the 0 s budget ran out with 2 of 2 writes left")
    assert snapshot(project, env) == before

    result, _, step = compact(project, env)
    assert result.exit_code == 0 and step["detail"] == "2 entries, 2 links: 1 backlinks, 1 stub"


def test_a_store_larger_than_the_census_is_truncated_and_untouched(
    project: Path, env: dict[str, str]
) -> None:
    save(project, env, ("a:one", "One", "Plain."), ("b:two", "Two", "Names a:one."), ("c:3", "Three", "x"))
    before = snapshot(project, env)

    result, _, step = compact(project, {**env, "MEMCTL_COMPACT_MAX_ENTRIES": "2"})

    assert result.exit_code == 1
    assert (step["outcome"], step["exit_code"]) == ("failed", 3)
    assert "more than 2 entries (compact_max_entries); nothing written" in step["error"]
    assert snapshot(project, env) == before


def test_undo_restores_the_entries_and_deletes_the_stubs_but_keeps_later_writes(
    project: Path, env: dict[str, str]
) -> None:
    save(project, env, ("a:one", "One", "Plain."), ("b:two", "Two", "Names a:one and [[c:three]]."))
    save(project, env, ("d:four", "Four", "Names b:two."))
    before = snapshot(project, env)
    result, report, _ = compact(project, env)
    assert result.exit_code == 0, result.output
    save(project, env, ("b:two", "Two", "An agent's later text, kept by the undo. Names a:one, [[c:three]]."))
    later = snapshot(project, env)["b:two"]

    undone, restored = maintain(project, env, "--undo", report["run_id"])

    assert undone.exit_code == 0, undone.output
    assert restored == restored | {"entries_restored": 2, "entries_left": ["b:two"], "restored": 0}
    after = snapshot(project, env)
    assert "c:three" not in after, "the stub the run created is gone"
    assert after["a:one"][0].body == before["a:one"][0].body
    assert after["b:two"][0].body == later[0].body
    assert set(after) == set(before)


def test_compaction_runs_last_in_the_whole_job(project: Path, env: dict[str, str]) -> None:
    save(project, env, ("a:one", "One", "Plain."), ("b:two", "Two", "Names a:one."))

    result, report = maintain(project, env, "--dry-run")

    assert result.exit_code == 0, result.output
    assert report["steps"][-1]["name"] == "compact-entries"
    assert report["steps"][-1]["detail"] == "would: 2 entries, 1 links: 1 backlinks"


def test_a_project_without_entries_gets_no_entry_store(project: Path) -> None:
    result, _, step = compact(project, bridge_env())

    assert result.exit_code == 0, result.output
    assert step["detail"] == "nothing to do: no entry store yet (nothing has saved an entry)"
    assert not (project / ".memory" / "entries.db").exists()


def test_an_entry_an_agent_deletes_between_read_and_write_stays_deleted(
    project: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    save(project, env, ("a:one", "One", "Plain."), ("b:two", "Two", "Names a:one."))
    monkeypatch.setattr(
        _compact, "open_entry_store", lambda s: _AgentInTheWay(open_entry_store(s), "a:one", 1, delete=True)
    )

    result, report, step = compact(project, env)

    assert result.exit_code == 0, result.output
    assert step["outcome"] == "ok" and report["actions"]["compact-entries"] == []
    assert "a:one" not in snapshot(project, env), "no stub takes a deleted entry's place"


def test_the_text_report_names_the_step_and_the_undo_counts_entries(
    project: Path, env: dict[str, str]
) -> None:
    save(project, env, ("a:one", "One", "Plain."), ("b:two", "Two", "Names a:one."))
    argv = ["maintain", "--project", str(project), "--passes", "compact-entries"]

    ran = CliRunner().invoke(cli, argv, env=env)

    assert ran.exit_code == 0, ran.output
    assert "compact-entries: ok: 2 entries, 1 links: 1 backlinks" in ran.output
    run_id = ran.output.split("maintain run ", 1)[1].split()[0]
    undone = CliRunner().invoke(cli, ["maintain", "--project", str(project), "--undo", run_id], env=env)
    assert undone.exit_code == 0, undone.output
    assert f"run {run_id} undone: 0 documents and 1 entries restored" in undone.output
    assert snapshot(project, env)["a:one"][0].body == "Plain."


def test_an_entry_with_an_expiry_keeps_it(project: Path, env: dict[str, str]) -> None:
    save(project, env, ("b:two", "Two", "Names a:one."))

    async def expiring(store: EntryStore) -> None:
        write = EntryWrite("a:one", "One", "Plain.", "state", (), "test", "app")
        assert (await store.set(write, ttl=3600, if_version=None, operation_id=None)).status == "applied"

    async def expiry(store: EntryStore) -> float | None:
        async for batch in store.export_records():
            for record in batch:
                if record.id == "a:one":
                    return record.expires_at
        return None

    on_store(project, env, expiring)
    before = on_store(project, env, expiry)

    result, _, step = compact(project, env)

    assert result.exit_code == 0 and step["detail"] == "2 entries, 1 links: 1 backlinks"
    assert snapshot(project, env)["a:one"][0].body.endswith("- `b:two`: Two")
    after = on_store(project, env, expiry)
    assert before is not None and after is not None and abs(after - before) <= 2


def test_text_an_agent_writes_below_the_block_is_kept(project: Path, env: dict[str, str]) -> None:
    save(project, env, ("a:one", "One", "Plain."), ("b:two", "Two", "Names a:one."))
    assert compact(project, env)[0].exit_code == 0
    blocked = snapshot(project, env)["a:one"][0].body
    save(project, env, ("a:one", "One", f"{blocked}\n\nAn agent's note, added later."))

    result, _, step = compact(project, env)

    assert result.exit_code == 0 and step["detail"] == "2 entries, 1 links: 1 backlinks"
    assert snapshot(project, env)["a:one"][0].body == (
        f"Plain.\n\nAn agent's note, added later.\n\n## Referenced by\n\n{MARKER}\n- `b:two`: Two"
    )
    assert compact(project, env)[2]["detail"] == "2 entries, 1 links: nothing to do"


def test_an_unreachable_entry_store_fails_the_step_with_exit_code_1(project: Path) -> None:
    with run_server(valkey_server_binary()) as server:
        url = f"valkey://127.0.0.1:{server.port}/0"
    env = bridge_env(MEMCTL_ENTRY_STORE=url)  # the server is gone: nothing listens there

    result, report, step = compact(project, env)

    assert result.exit_code == 1
    assert (step["outcome"], step["exit_code"]) == ("failed", 1)
    assert step["error"].startswith("store: ") and report["error"].startswith("compact-entries: store: ")


def test_a_step_past_its_timeout_is_stopped(project: Path, env: dict[str, str]) -> None:
    save(project, env, ("a:one", "One", "Plain."), ("b:two", "Two", "Names a:one."))
    before = snapshot(project, env)

    result, _, step = compact(project, env, "--step-timeout", "0")

    assert result.exit_code == 1
    assert (step["outcome"], step["error"]) == ("timeout", "timed out after 0 s")
    assert snapshot(project, env) == before
