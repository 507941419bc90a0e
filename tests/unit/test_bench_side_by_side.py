"""bench/side_by_side.py's memory-mcp peer, without memory-mcp: the options, the command it
runs, and the keys its fill writes (memory-mcp's own memory_set layout)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, ModuleType]:
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("side_by_side"), importlib.import_module("_memory_mcp")


def checkout(tmp_path: Path, node_modules: bool = True) -> Path:
    (tmp_path / "server.js").write_text("// memory-mcp\n")
    if node_modules:
        (tmp_path / "node_modules").mkdir()
    return tmp_path


def test_options_name_the_peers_sizes_and_ops(bench: tuple[ModuleType, ModuleType], tmp_path: Path) -> None:
    side_by_side, _ = bench
    argv = ["--stores", "valkey,sqlite", "--memory-mcp", str(checkout(tmp_path)), "--entries", "10000,100000"]
    config = side_by_side.parse_args([*argv, "--ops", "ping,get,set,search", "--calls", "300"])
    assert config.stores == ("valkey", "sqlite")
    assert config.memory_mcp == tmp_path.resolve()
    assert config.sizes == (10_000, 100_000)
    assert config.ops == ("ping", "get", "set", "search")
    assert config.calls == 300
    assert [label for label, _ in config.trees] == ["memctl"]


def test_the_defaults_are_this_tree_on_sqlite_without_memory_mcp(
    bench: tuple[ModuleType, ModuleType],
) -> None:
    side_by_side, _ = bench
    config = side_by_side.parse_args([])
    assert config.trees == (("memctl", BENCH.parent),)
    assert (config.stores, config.memory_mcp, config.ops) == (("sqlite",), None, ("ping", "get", "set"))


@pytest.mark.parametrize(
    "argv",
    [
        ["--stores", "dify"],
        ["--ops", "ping,list"],
        ["--entries", "10k"],
        ["--entries", "0"],
        ["--calls", "0"],
    ],
)
def test_bad_options_are_usage_errors(bench: tuple[ModuleType, ModuleType], argv: list[str]) -> None:
    side_by_side, _ = bench
    with pytest.raises(SystemExit) as exc:
        side_by_side.parse_args(argv)
    assert exc.value.code == 2


def test_a_checkout_without_its_dependencies_is_refused(
    bench: tuple[ModuleType, ModuleType], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    side_by_side, _ = bench
    with pytest.raises(SystemExit):
        side_by_side.parse_args(["--memory-mcp", str(checkout(tmp_path, node_modules=False))])
    assert "npm ci" in capsys.readouterr().err


def test_memory_mcp_runs_on_its_defaults_against_the_given_valkey(
    bench: tuple[ModuleType, ModuleType],
) -> None:
    _, memory_mcp = bench
    environ = {"PATH": "/usr/bin", "AUTH_TOKEN": "t", "MAX_ENTRIES_WARN": "5", "MEMCTL_X": "1", "PORT": "1"}
    argv, env = memory_mcp.command(Path("/co"), 4100, "redis://127.0.0.1:4200/0", environ)
    assert argv == ["node", "/co/server.js"]
    assert env == {"PATH": "/usr/bin", "PORT": "4100", "VALKEY_URL": "redis://127.0.0.1:4200/0"}


class Pipe:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self.calls.append((name, *args, *kwargs.values()))


def test_the_fill_writes_what_memory_set_writes_for_a_new_entry(bench: tuple[ModuleType, ModuleType]) -> None:
    _, memory_mcp = bench
    pipe = Pipe()
    entry = {"id": "e-1", "title": "T", "body": "B", "type": "pattern", "tags": ["a", "b"], "project": "p"}
    memory_mcp.write_entry(pipe, {**entry, "source": "bench"}, "2026-12-06")
    fields = {
        "title": "T", "body": "B", "type": "pattern", "source": "bench", "project": "p",
        "updated": "2026-12-06", "hits": "0", "ttl": "", "tags": "a,b", "created": "2026-12-06",
    }  # fmt: skip
    snapshot = (
        '{"title":"T","body":"B","type":"pattern","tags":["a","b"],"source":"bench","project":"p",'
        '"updated":"2026-12-06","operation":"created"}'
    )
    assert pipe.calls == [
        ("hset", "mem:e-1", fields),
        ("sadd", "type:pattern", "mem:e-1"),
        ("sadd", "project:p", "mem:e-1"),
        ("sadd", "tag:a", "mem:e-1"),
        ("sadd", "tag:b", "mem:e-1"),
        ("lpush", "memver:e-1", snapshot),
        ("ltrim", "memver:e-1", 0, 19),
    ]
    assert list(json.loads(snapshot)) == [
        "title",
        "body",
        "type",
        "tags",
        "source",
        "project",
        "updated",
        "operation",
    ]
