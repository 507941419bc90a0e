"""Structural merges: the user's content passes through, memctl's entries appear exactly once."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.api.clients import Plan
from memctl.provision._clients import hook_entries
from memctl.provision._merge import (
    HOOK_SIGNATURE,
    OWNED_HOOK_SIGNATURES,
    ensure_listed,
    merge_hooks,
    merge_marked_block,
    merge_servers,
    merge_toml_key,
    merge_toml_table,
    remove_hooks,
    remove_listed,
    remove_marked_block,
    remove_server,
    remove_toml_table,
)
from memory_bridge import ConfigError

from .json_strategies import values

OURS = hook_entries(Plan(project=Path("/work/app"), launcher=Path("/opt/memctl/bin/memctl")))
ENTRY = {"command": "memctl", "args": ["serve", "--project", "/work/app"]}
TABLE = ("mcp_servers", "memory")
START, END = "# >>> memctl >>>", "# <<< memctl <<<"
PROPERTY = settings(max_examples=200, deadline=None)


def ordered(value: Any) -> str:
    """A value's JSON text: equal only if keys are in the same order too."""
    return json.dumps(value, ensure_ascii=False)


# Arbitrary user JSON.

commands = st.text(max_size=12) | st.builds(
    lambda before, signature, after: before + signature + after,
    st.text(max_size=5),
    st.sampled_from(OWNED_HOOK_SIGNATURES),
    st.text(max_size=5),
)
inner_hooks = (
    st.fixed_dictionaries(
        {"type": st.just("command"), "command": commands}, optional={"timeout": st.integers(1, 99)}
    )
    | values
)
hook_entry = (
    st.fixed_dictionaries(
        {"hooks": st.lists(inner_hooks, max_size=3)}, optional={"matcher": st.text(max_size=6)}
    )
    | values
)
events = st.sampled_from([*OURS, "Stop", "PostCompact", "UserPromptSubmit"])


def with_member(key: str, member: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Arbitrary objects that may hold `key` (at a random position) with a value from `member`."""
    others = st.dictionaries(st.text(max_size=6).filter(lambda k: k != key), values, max_size=4)

    def build(extra: dict[str, Any], value: Any, position: int, present: bool) -> dict[str, Any]:
        items = list(extra.items())
        if present:
            items.insert(min(position, len(items)), (key, value))
        return dict(items)

    return st.builds(build, others, member, st.integers(0, 4), st.booleans())


settings_docs = with_member("hooks", st.dictionaries(events, st.lists(hook_entry, max_size=3), max_size=5))
server_maps = st.dictionaries(
    st.sampled_from(["memory", "other", "github", ""]) | st.text(max_size=6), values
)
server_docs = with_member("mcpServers", server_maps)


def owned(hook: Any) -> bool:
    command = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(command, str) and any(signature in command for signature in OWNED_HOOK_SIGNATURES)


def users_entries(entries: list[Any]) -> list[Any]:
    """What the user wrote in an event's entries: the spec's reading, owned hooks taken out."""
    kept = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
            users = [hook for hook in entry["hooks"] if not owned(hook)]
            if users or not entry["hooks"]:
                kept.append({**entry, "hooks": users})
        else:
            kept.append(entry)
    return kept


# Hooks.


@PROPERTY
@given(settings_docs)
def test_hooks_merge_keeps_every_user_value_and_adds_ours_once(document: dict[str, Any]) -> None:
    before = copy.deepcopy(document)
    merged = merge_hooks(document, OURS)
    assert ordered(document) == ordered(before), "the input was mutated"
    assert list(merged)[: len(document)] == list(document)
    for key in document.keys() - {"hooks"}:
        assert ordered(merged[key]) == ordered(document[key])
    theirs = document.get("hooks", {})
    assert list(merged["hooks"])[: len(theirs)] == list(theirs)
    for event, entries in merged["hooks"].items():
        if event in OURS:
            assert ordered(entries) == ordered([*users_entries(theirs.get(event, [])), *OURS[event]])
            inner = [
                h
                for e in entries
                if isinstance(e, dict) and isinstance(e.get("hooks"), list)
                for h in e["hooks"]
            ]
            assert [hook for hook in inner if owned(hook)] == [h for e in OURS[event] for h in e["hooks"]]
        else:
            assert ordered(entries) == ordered(theirs[event])


@PROPERTY
@given(settings_docs)
def test_hooks_merge_is_idempotent(document: dict[str, Any]) -> None:
    once = merge_hooks(document, OURS)
    assert ordered(merge_hooks(once, OURS)) == ordered(once)


def test_hooks_replace_the_seeds_and_keep_mixed_entries_with_the_users_hooks() -> None:
    seed = "bash -c ': ctxr-memory-hook-v1\nDIR=${CLAUDE_PROJECT_DIR:-$(pwd)}'\""
    legacy = '"$CLAUDE_PROJECT_DIR"/memory/scripts/hooks/flush.sh pre-compact'
    document = {
        "model": "opus",
        "hooks": {
            "SessionStart": [{"matcher": "", "hooks": [{"type": "command", "command": seed}]}],
            "PreCompact": [{"hooks": [{"type": "command", "command": "make lint"}, {"command": legacy}]}],
            "Stop": [{"hooks": [{"type": "command", "command": f"old {HOOK_SIGNATURE}"}]}],
        },
    }
    merged = merge_hooks(document, OURS)
    assert merged["hooks"]["SessionStart"] == OURS["SessionStart"]
    assert merged["hooks"]["PreCompact"] == [
        {"hooks": [{"type": "command", "command": "make lint"}]},
        *OURS["PreCompact"],
    ]
    assert merged["hooks"]["Stop"] == document["hooks"]["Stop"], "events memctl does not define pass through"
    assert merged["model"] == "opus"


def test_hook_commands_carry_the_signature_and_the_plan_matcher() -> None:
    for entries in OURS.values():
        assert all(hook["command"].endswith(HOOK_SIGNATURE) for entry in entries for hook in entry["hooks"])
    assert OURS["PostToolUse"][0]["matcher"] == "ExitPlanMode"
    assert "matcher" not in OURS["SessionStart"][0]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"hooks": []}, '"hooks" is an array'),
        ({"hooks": {"SessionStart": {}}}, '"hooks.SessionStart" is an object'),
    ],
)
def test_hooks_of_the_wrong_shape_are_refused(document: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        merge_hooks(document, OURS)


# MCP servers.


@PROPERTY
@given(server_docs)
def test_servers_merge_replaces_only_our_server(document: dict[str, Any]) -> None:
    before = copy.deepcopy(document)
    merged = merge_servers(document, key="mcpServers", name="memory", entry=ENTRY)
    assert ordered(document) == ordered(before), "the input was mutated"
    assert list(merged)[: len(document)] == list(document)
    for key in document.keys() - {"mcpServers"}:
        assert ordered(merged[key]) == ordered(document[key])
    theirs = document.get("mcpServers", {})
    servers = merged["mcpServers"]
    assert list(servers) == list(theirs) + ([] if "memory" in theirs else ["memory"])
    mine = theirs.get("memory")
    assert servers["memory"] == {**(mine if isinstance(mine, dict) else {}), **ENTRY}, "user keys stay"
    for name in theirs.keys() - {"memory"}:
        assert ordered(servers[name]) == ordered(theirs[name])
    again = merge_servers(merged, key="mcpServers", name="memory", entry=ENTRY)
    assert ordered(again) == ordered(merged)


def test_servers_map_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(ConfigError, match='"servers" is an array, expected an object'):
        merge_servers({"servers": []}, key="servers", name="memory", entry=ENTRY)


@PROPERTY
@given(st.lists(values, max_size=5))
def test_ensure_listed_appends_once_and_keeps_the_list(listed: list[Any]) -> None:
    merged = ensure_listed({"enabledMcpjsonServers": listed}, key="enabledMcpjsonServers", value="memory")
    expected = listed if "memory" in listed else [*listed, "memory"]
    assert ordered(merged["enabledMcpjsonServers"]) == ordered(expected)
    assert ensure_listed(merged, key="enabledMcpjsonServers", value="memory") == merged


def test_ensure_listed_refuses_a_non_list() -> None:
    with pytest.raises(ConfigError, match="is a string, expected an array"):
        ensure_listed({"enabledMcpjsonServers": "memory"}, key="enabledMcpjsonServers", value="memory")


# TOML.

OUR_BLOCK = '[mcp_servers.memory]\ncommand = "memctl"\nargs = ["serve", "--project", "/work/app"]\n'
CODEX = """\
# Codex settings
model = "o3"  # the default model
approval_policy = "on-request"

[mcp_servers.memory]  # set up by hand
command = "docker"
args = [
  "exec", # container
  "[not-a-table]",
  "-i",
]
env = { A = "[b]" }

# the GitHub server, keep
[mcp_servers.github]
command = "gh-mcp"
note = '''
[mcp_servers.memory]
looks like a header, is a string
'''

[profiles.fast]
model = "o4-mini"
"""


def test_toml_replaces_our_table_in_place_and_keeps_everything_else() -> None:
    merged = merge_toml_table(CODEX, TABLE, ENTRY)
    start = CODEX.index("[mcp_servers.memory]")
    end = CODEX.index("\n\n# the GitHub server") + 1
    assert merged == CODEX[:start] + OUR_BLOCK + CODEX[end:]
    parsed = tomllib.loads(merged)
    assert parsed["mcp_servers"]["memory"] == ENTRY
    assert parsed["mcp_servers"]["github"]["note"].startswith("[mcp_servers.memory]")
    assert merge_toml_table(merged, TABLE, ENTRY) == merged


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", OUR_BLOCK),
        ('model = "o3"', f'model = "o3"\n\n{OUR_BLOCK}'),
        ('model = "o3"\n\n', f'model = "o3"\n\n{OUR_BLOCK}'),
        (
            "[mcp_servers.other]\ncommand = 'x'\n# end\n",
            f"[mcp_servers.other]\ncommand = 'x'\n# end\n\n{OUR_BLOCK}",
        ),
    ],
)
def test_toml_appends_our_table_when_absent(text: str, expected: str) -> None:
    assert merge_toml_table(text, TABLE, ENTRY) == expected


@pytest.mark.parametrize(
    "header", ['[mcp_servers."memory"]', "[ mcp_servers . memory ]", "[mcp_servers.'memory'] # mine"]
)
def test_toml_recognises_our_header_however_it_is_spelled(header: str) -> None:
    text = f"{header}\ncommand = 'old'\n\n[other]\nx = 1\n"
    assert merge_toml_table(text, TABLE, ENTRY) == f"{OUR_BLOCK}\n[other]\nx = 1\n"


def test_toml_comments_beside_our_table_survive_merge_and_removal() -> None:
    text = "# Codex\n\n# memctl's server, below\n[mcp_servers.memory]\ncommand = 'old'\n"
    text += "# after it\n\n[o]\nx = 1\n"
    merged = merge_toml_table(text, TABLE, ENTRY)
    assert merged == "# Codex\n\n# memctl's server, below\n" + OUR_BLOCK + "# after it\n\n[o]\nx = 1\n"
    assert merge_toml_table(merged, TABLE, ENTRY) == merged
    assert (
        remove_toml_table(merged, TABLE) == "# Codex\n\n# memctl's server, below\n# after it\n\n[o]\nx = 1\n"
    )


def test_toml_keeps_our_servers_subtables_and_crlf() -> None:
    text = "a = 1\r\n\r\n[mcp_servers.memory.env]\r\nTOKEN_FILE = '~/.t'\r\n"
    merged = merge_toml_table(text, TABLE, ENTRY)
    assert merged == text + "\r\n" + OUR_BLOCK.replace("\n", "\r\n")
    assert tomllib.loads(merged)["mcp_servers"]["memory"]["env"] == {"TOKEN_FILE": "~/.t"}


def test_toml_escapes_strings() -> None:
    entry = {"command": "memctl", "args": ['/tmp/a "b"\\c\u00e9\x01']}
    merged = merge_toml_table("", TABLE, entry)
    assert tomllib.loads(merged)["mcp_servers"]["memory"] == entry


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[mcp_servers\n", "the file is not valid TOML"),
        ("[mcp_servers]\nmemory = { command = 'x' }\n", "the merged file"),
        ("mcp_servers.memory.command = 'x'\n", "the merged file"),
    ],
)
def test_toml_that_cannot_be_merged_is_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        merge_toml_table(text, TABLE, ENTRY)


bare_keys = st.from_regex(r"[a-z][a-z0-9_-]{0,5}", fullmatch=True).filter(
    lambda k: k not in {"mcp_servers", "tools", "env"}
)


def basic_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, given no surrogates or control characters)."""
    return json.dumps(text, ensure_ascii=False)


toml_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=8)
toml_values = (
    toml_text.map(basic_string)
    | toml_text.filter(lambda s: "'" not in s).map(lambda s: f"'{s}'")
    | st.integers(-999, 999).map(str)
    | st.lists(toml_text, max_size=3).map(
        lambda items: "[\n" + "".join(f"  {basic_string(i)}, # x\n" for i in items) + "]"
    )
    | st.just("'''\n[mcp_servers.memory]\n# not a comment\n'''")
    | st.just('"""\nkey = [\n"""')
)
trivia = st.lists(st.just("\n") | toml_text.map(lambda s: "# " + s + "\n"), max_size=2).map("".join)


def key_values(keys: list[str], body: list[str], between: list[str]) -> str:
    return "".join(f"{key} = {value}\n{gap}" for key, value, gap in zip(keys, body, between, strict=False))


@st.composite
def tables(draw: st.DrawFn, name: str) -> str:
    keys = draw(st.lists(bare_keys, max_size=3, unique=True))
    body = [draw(toml_values) for _ in keys]
    between = [draw(trivia) for _ in keys]
    return f"[{name}]\n" + key_values(keys, body, between) + draw(trivia)


@st.composite
def codex_configs(draw: st.DrawFn) -> tuple[str, str, str]:
    """(before, our old block or "", after): a valid config.toml cut around our table."""
    root_keys = draw(st.lists(bare_keys, max_size=3, unique=True))
    root = draw(trivia) + key_values(root_keys, [draw(toml_values) for _ in root_keys], [""] * len(root_keys))
    names = draw(st.permutations(["mcp_servers.other", "tools", "mcp_servers.memory.env"]))
    cut = draw(st.integers(0, len(names)))
    before = root + draw(trivia) + "".join(draw(tables(name)) for name in names[:cut])
    after = "".join(draw(tables(name)) for name in names[cut:])
    if not draw(st.booleans()):
        return before, "", after
    keys = draw(st.lists(bare_keys, max_size=3, unique=True))
    header = draw(st.sampled_from(["[mcp_servers.memory]", '[mcp_servers."memory"] # mine']))
    block = header + "\n" + key_values(keys, [draw(toml_values) for _ in keys], [draw(trivia) for _ in keys])
    return before, block, draw(trivia) + after


def trailing_trivia(block: str) -> str:
    """The blank and comment lines that end a table block (after its last key)."""
    lines = block.splitlines(keepends=True)
    tail: list[str] = []
    while len(lines) > 1 and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        tail.insert(0, lines.pop())
    return "".join(tail)


@PROPERTY
@given(codex_configs())
def test_toml_merge_changes_only_our_table(parts: tuple[str, str, str]) -> None:
    before, block, after = parts
    text = before + block + after
    original = tomllib.loads(text)
    merged = merge_toml_table(text, TABLE, ENTRY)
    if block:
        assert merged == before + OUR_BLOCK + trailing_trivia(block) + after
    else:
        assert merged.startswith(text) and merged.endswith(OUR_BLOCK)
    parsed = tomllib.loads(merged)
    assert parsed["mcp_servers"]["memory"].items() >= ENTRY.items()
    for key, value in original.items():
        if key != "mcp_servers":
            assert parsed[key] == value
    assert parsed["mcp_servers"].get("other") == original.get("mcp_servers", {}).get("other")
    assert merge_toml_table(merged, TABLE, ENTRY) == merged


# Marker blocks.

BLOCK = f"{START}\n/.memory/\n{END}\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", BLOCK),
        ("node_modules/", f"node_modules/\n\n{BLOCK}"),
        ("node_modules/\n\n", f"node_modules/\n\n{BLOCK}"),
        (f"a\n{START}\n/old/\n{END}\nb", f"a\n{BLOCK}b\n"),
        (f"{START}\n{END}\nx\n  {START}\n/.memory/\n{END}  \ny\n", f"{BLOCK}x\ny\n"),
        ("a\r\nb\r\n", f"a\r\nb\r\n\r\n{BLOCK.replace(chr(10), chr(13) + chr(10))}"),
    ],
)
def test_marked_block_is_present_once(text: str, expected: str) -> None:
    merged = merge_marked_block(text, start=START, end=END, body=["/.memory/"])
    assert merged == expected
    assert merge_marked_block(merged, start=START, end=END, body=["/.memory/"]) == merged


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"{START}\n/.memory/\n", "has no"),
        (f"{END}\n", "does not close"),
        (f"{START}\n{START}\n{END}\n", "line 2"),
    ],
)
def test_unbalanced_marker_blocks_are_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        merge_marked_block(text, start=START, end=END, body=["/.memory/"])


gitignore_lines = st.lists(
    st.text(st.characters(blacklist_characters="\n\r"), max_size=10).filter(
        lambda s: s.strip() not in (START, END)
    ),
    max_size=6,
)


@PROPERTY
@given(gitignore_lines, gitignore_lines, st.booleans(), st.booleans())
def test_marked_block_keeps_every_other_line(
    head: list[str], tail: list[str], present: bool, final: bool
) -> None:
    block = [START, "/stale/", END] if present else []
    text = "\n".join([*head, *block, *tail]) + ("\n" if final else "")
    merged = merge_marked_block(text, start=START, end=END, body=["/.memory/"])
    lines = merged.split("\n")
    assert merged.endswith("\n") and lines.count(START) == 1 and lines.count(END) == 1
    first = lines.index(START)
    assert lines[first : first + 3] == [START, "/.memory/", END]
    rest = [line for i, line in enumerate(lines[:-1]) if not first <= i < first + 3]
    expected = text.split("\n")[: -1 if text.endswith("\n") else None] if text else []
    if present:
        del expected[expected.index(START) : expected.index(START) + 3]
    if not present and rest != expected:
        assert rest == [*expected, ""], "only a blank separator line may be added"
    else:
        assert rest == expected
    assert merge_marked_block(merged, start=START, end=END, body=["/.memory/"]) == merged


# Taking memctl's entries back out (memctl down).


def without_empty_events(document: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(document)
    hooks = result.get("hooks")
    if isinstance(hooks, dict):
        for event in [e for e, entries in hooks.items() if entries == []]:
            del hooks[event]
        if not hooks:
            del result["hooks"]
    return result


@PROPERTY
@given(settings_docs.filter(lambda d: isinstance(d.get("hooks"), dict)))
def test_hooks_merged_then_removed_leave_the_users_hooks(document: dict[str, Any]) -> None:
    removed = remove_hooks(merge_hooks(document, OURS))
    # An event the user left as an empty list is indistinguishable from one that held only
    # memctl's hooks, so both drop it; apart from that, merge-then-remove equals remove.
    assert ordered(without_empty_events(removed)) == ordered(without_empty_events(remove_hooks(document)))
    assert ordered(remove_hooks(removed)) == ordered(removed), "idempotent"
    for key in document.keys() - {"hooks"}:
        assert ordered(removed[key]) == ordered(document[key])
    inner = [
        h
        for es in removed.get("hooks", {}).values()
        if isinstance(es, list)
        for e in es
        if isinstance(e, dict) and isinstance(e.get("hooks"), list)
        for h in e["hooks"]
    ]
    assert not any(owned(h) for h in inner)


@PROPERTY
@given(
    server_docs.filter(lambda d: isinstance(d.get("mcpServers"), dict) and "memory" not in d["mcpServers"])
)
def test_servers_merged_then_removed_are_the_users_again(document: dict[str, Any]) -> None:
    merged = merge_servers(document, key="mcpServers", name="memory", entry=ENTRY)
    assert ordered(remove_server(merged, key="mcpServers", name="memory")) == ordered(document)


@PROPERTY
@given(st.lists(st.sampled_from(["a", "b", "memory"]), max_size=4, unique=True))
def test_listed_value_is_taken_out_and_only_it(listed: list[str]) -> None:
    document = {"enabledMcpjsonServers": listed, "other": 1}
    removed = remove_listed(
        ensure_listed(document, key="enabledMcpjsonServers", value="memory"),
        key="enabledMcpjsonServers",
        value="memory",
    )
    assert removed == {"enabledMcpjsonServers": [x for x in listed if x != "memory"], "other": 1}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "model = 'o3'\n",
        "[mcp_servers.github]\ncommand = 'gh'\n",
        "# mine\n[profile]\nx = 1\n\n# trailing\n",
    ],
)
def test_toml_table_merged_then_removed_gives_the_text_back(text: str) -> None:
    merged = merge_toml_table(text, TABLE, ENTRY)
    assert remove_toml_table(merged, TABLE) == text
    assert remove_toml_table(text, TABLE) == text


@pytest.mark.parametrize("text", ["", "node_modules/\n", "a\n\nb\n", "x"])
def test_gitignore_block_merged_then_removed_gives_the_lines_back(text: str) -> None:
    merged = merge_marked_block(text, start=START, end=END, body=["/.memory/"])
    removed = remove_marked_block(merged, start=START, end=END)
    assert removed.splitlines() == text.splitlines()


# One top-level key (the settings the inventory decides, in .memory/config.toml).


def test_a_top_level_key_is_replaced_where_it_stands() -> None:
    text = '# mine\nentry_store = "sqlite"\nlog_level = "INFO"\n\n[table]\nentry_store = "kept"\n'
    merged = merge_toml_key(text, "entry_store", "valkey://127.0.0.1:6379/0?prefix=app:")
    assert merged == text.replace('"sqlite"', '"valkey://127.0.0.1:6379/0?prefix=app:"')


def test_a_missing_key_goes_after_the_leading_comments_before_any_table() -> None:
    text = "# my settings\n\n[table]\nx = 1\n"
    merged = merge_toml_key(text, "entry_store", "sqlite")
    assert tomllib.loads(merged) == {"entry_store": "sqlite", "table": {"x": 1}}
    assert merged.startswith('# my settings\nentry_store = "sqlite"\n')
    assert merge_toml_key(merged, "entry_store", "sqlite") == merged, "idempotent"
    assert merge_toml_key("", "entry_store", "sqlite") == 'entry_store = "sqlite"\n'


def test_a_value_over_several_lines_is_replaced_and_its_comment_kept() -> None:
    text = '# mine\nentry_store = [\n  "a",\n]  # was a list\n[table]\nx = 1\n'
    merged = merge_toml_key(text, "entry_store", "sqlite")
    assert merged == '# mine\nentry_store = "sqlite"  # was a list\n[table]\nx = 1\n'


def test_a_key_that_is_a_table_is_refused() -> None:
    with pytest.raises(ConfigError, match="is a table"):
        merge_toml_key("[entry_store]\nx = 1\n", "entry_store", "sqlite")
