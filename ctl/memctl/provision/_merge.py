"""Structural merges of client configuration: memctl's entries in, the user's left as they are.

Every function here is pure: it takes a parsed document (or a file's text) and returns a
new one, never mutating its input. Each replaces only what memctl owns, so running it
again on its own output changes nothing:

- `merge_servers`: one server in an MCP servers map (`.mcp.json`, `.cursor/mcp.json`, ...);
- `merge_hooks`: memctl's hooks in a hooks map (`.claude/settings.json`, `.agents/hooks.json`),
  recognised by their ownership signatures (the seed's too, so an upgrade replaces them);
- `ensure_listed`: a value in a list (`enabledMcpjsonServers`);
- `merge_toml_table`: one `[a.b]` table block in a TOML file (Codex's `config.toml`), edited
  through tomlkit's style-preserving document, so the user's comments, order and formatting
  survive;
- `merge_marked_block`: a block between two marker lines (`.gitignore`).

A document memctl cannot merge without losing the user's content (a servers map that is a
list, TOML that does not parse, an unclosed marker block) raises `ConfigError`.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

import tomlkit
from tomlkit import TOMLDocument
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, Comment, Item, Key, Null, Table, Whitespace

from memory_bridge import ConfigError

__all__ = [
    "HOOK_SIGNATURE",
    "OWNED_HOOK_SIGNATURES",
    "ensure_listed",
    "merge_hooks",
    "merge_marked_block",
    "merge_servers",
    "merge_toml_key",
    "merge_toml_table",
    "remove_hooks",
    "remove_listed",
    "remove_marked_block",
    "remove_server",
    "remove_toml_table",
]

HOOK_SIGNATURE = "# memctl-hook-v1"
"""Ends the command of every hook memctl installs (a shell comment, so it is not an
argument); marks the hook as memctl's."""

OWNED_HOOK_SIGNATURES = (
    HOOK_SIGNATURE,
    ": ctxr-memory-hook-v1",
    '"$CLAUDE_PROJECT_DIR"/.memory/src/scripts/hooks/',
    '"$CLAUDE_PROJECT_DIR"/memory/scripts/hooks/',
)
"""A hook whose command contains one of these is memctl's (or the seed's, which memctl replaces)."""

JSONObject = dict[str, Any]
TomlValue = str | list[str]


def _kind(value: object) -> str:
    """How a JSON value's type reads in an error message."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _member(document: JSONObject, key: str, expected: type, default: object) -> Any:
    """`document[key]`, inserted as `default` when absent; `ConfigError` if of the wrong type."""
    value = document.setdefault(key, default)
    if not isinstance(value, expected):
        raise ConfigError(f'"{key}" is {_kind(value)}, expected {_kind(default)}')
    return value


def merge_servers(target: Mapping[str, Any], *, key: str, name: str, entry: Mapping[str, Any]) -> JSONObject:
    """`target` with `entry` as server `name` in its `key` map; everything else as it was.

    An existing server `name` keeps its place and any keys the user added to it (such as
    an `env`); the keys of `entry` take memctl's values. A new one goes at the end.
    """
    result = copy.deepcopy(dict(target))
    servers = _member(result, key, dict, {})
    existing = servers.get(name)
    servers[name] = {**(existing if isinstance(existing, dict) else {}), **copy.deepcopy(dict(entry))}
    return result


def _is_owned(hook: object, signatures: Sequence[str]) -> bool:
    command = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(command, str) and any(signature in command for signature in signatures)


def _without_owned(entries: list[Any], signatures: Sequence[str]) -> list[Any]:
    """Hook entries with every owned inner hook removed, and entries left empty by that dropped."""
    kept: list[Any] = []
    for entry in entries:
        inner = entry.get("hooks") if isinstance(entry, dict) else None
        if not isinstance(inner, list):
            kept.append(entry)
            continue
        users = [hook for hook in inner if not _is_owned(hook, signatures)]
        if len(users) == len(inner):
            kept.append(entry)
        elif users:
            kept.append({**entry, "hooks": users})
    return kept


def merge_hooks(
    target: Mapping[str, Any],
    ours: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    signatures: Sequence[str] = OWNED_HOOK_SIGNATURES,
) -> JSONObject:
    """`target` with memctl's hook entries for each event in `ours`, replacing older ones.

    For each event in `ours`, inner hooks whose command carries a signature are removed
    (entries left empty by that are dropped, mixed entries keep the user's hooks), then
    our entries are appended. Other events and keys pass through.
    """
    result = copy.deepcopy(dict(target))
    hooks = _member(result, "hooks", dict, {})
    for event, entries in ours.items():
        current = hooks.get(event, [])
        if not isinstance(current, list):
            raise ConfigError(f'"hooks.{event}" is {_kind(current)}, expected an array')
        hooks[event] = [*_without_owned(current, signatures), *copy.deepcopy(list(entries))]
    return result


def ensure_listed(target: Mapping[str, Any], *, key: str, value: str) -> JSONObject:
    """`target` with `value` in its `key` list (appended if missing); the rest as it was."""
    result = copy.deepcopy(dict(target))
    listed = _member(result, key, list, [])
    if value not in listed:
        listed.append(value)
    return result


# TOML, edited through tomlkit's style-preserving document.

_HEAD, _END = "\x00memctl-table\x00", "\x00memctl-end\x00"
"""Marks where a table's header and its last key end in a rendering of the document."""


def _split_lines(text: str) -> list[str]:
    """Lines with their endings; only "\\n" ends a line (unlike `str.splitlines`)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _parse_toml(text: str, what: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} is not valid TOML ({exc})") from exc


def _document(text: str) -> TOMLDocument:
    """`text` as a tomlkit document (after `_parse_toml` has proved it valid)."""
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(f"the file is not valid TOML ({exc})") from exc


Body = list[tuple[Key | None, Item]]


def _find_table(body: Body, table: tuple[str, ...], prefix: tuple[str, ...] = ()) -> tuple[Body, int] | None:
    """Where `[table]`'s own header stands: its parent's body and its index there.

    Tables named only through dotted keys, inline tables and super tables (`[a]` implied by
    `[a.b]`) have no header of their own and are not found.
    """
    for index, (key, item) in enumerate(body):
        if not isinstance(item, Table) or key is None or key.is_dotted():
            continue
        path = (*prefix, key.key)
        if path == table and not item.is_super_table():
            return body, index
        if path == table[: len(path)]:
            found = _find_table(item.value.body, table, path)
            if found is not None:
                return found
    return None


def _is_assignment(key: Key | None, item: Item) -> bool:
    """Whether a table's body item is one of its own keys (not trivia, not a sub-table)."""
    if isinstance(item, (Whitespace, Comment, Null)):
        return False
    return not (isinstance(item, (Table, AoT)) and key is not None and not key.is_dotted())


def _last_leaf(item: Item) -> Item:
    """The item whose trail ends `item`'s text (the last key of a dotted-key table)."""
    while isinstance(item, Table):
        item = [value for key, value in item.value.body if _is_assignment(key, value)][-1]
    return item


def _around_table(text: str, table: tuple[str, ...]) -> tuple[str, str] | None:
    """The text before and after `[table]`'s header and keys, or None if it has no header.

    What follows its last key (comments, blank lines, sub-tables) is left to the text after.
    The document is rendered with markers at the header and at the end of the last key.
    """
    document = _document(text)
    found = _find_table(document.body, table)
    if found is None:
        return None
    parent, index = found
    item = parent[index][1]
    assert isinstance(item, Table)
    keys = [value for key, value in item.value.body if _is_assignment(key, value)]
    item.display_name = _HEAD
    end = _last_leaf(keys[-1]) if keys else item
    trail = end.trivia.trail
    end.trivia.trail = _END + trail
    rendered = document.as_string()
    indent = item.trivia.indent
    head = rendered[: rendered.index("[" + _HEAD) - (len(indent) - indent.rfind("\n") - 1)]
    return head, rendered[rendered.index(_END) + len(_END) + len(trail) :]


def _render_table(table: Sequence[str], values: Mapping[str, TomlValue], newline: str) -> str:
    nested: dict[str, Any] = dict(values)
    for key in reversed(table):
        nested = {key: nested}
    return tomlkit.dumps(nested).replace("\n", newline)


def _without_table(document: Mapping[str, Any], table: Sequence[str]) -> dict[str, Any]:
    """`document` without `table`, and without the parent tables that leaves empty."""
    result = copy.deepcopy(dict(document))
    parents = [result]
    for key in table[:-1]:
        child = parents[-1].get(key)
        if not isinstance(child, dict):
            return result
        parents.append(child)
    parents[-1].pop(table[-1], None)
    for parent, key in zip(reversed(parents[:-1]), reversed(table[:-1]), strict=True):
        if not parent[key]:
            del parent[key]
    return result


def merge_toml_table(text: str, table: Sequence[str], values: Mapping[str, TomlValue]) -> str:
    """TOML `text` with the `[table]` block holding exactly `values`; everything else as it was.

    An existing block (header to its last key; the comments and sub-tables after it stay)
    is replaced in place; otherwise the block is appended. The result is parsed to prove
    it is valid TOML and that nothing but `table` changed.
    """
    table = tuple(table)
    before = _parse_toml(text, "the file")
    newline = _newline(text)
    block = _render_table(table, values, newline)
    around = _around_table(text, table)
    if around is not None:
        merged = around[0] + block + around[1]
    else:
        head = text if not text or text.endswith("\n") else text + newline
        separator = newline if head.strip() and not head.endswith(newline * 2) else ""
        merged = head + separator + block
    after = _parse_toml(merged, "the merged file (is the table also defined inline or by dotted keys?)")
    node: Any = after
    for key in table:
        node = node.get(key) if isinstance(node, dict) else None
    placed = isinstance(node, dict) and {key: node.get(key) for key in values} == dict(values)
    if not placed or _without_table(after, table) != _without_table(before, table):
        raise ConfigError(f"merging [{'.'.join(table)}] would change more than that table")
    return merged


# Marker blocks (.gitignore).


def _marked_spans(lines: Sequence[str], start: str, end: str) -> list[tuple[int, int]]:
    """Each `[first, last]` line pair of a start..end marker block; `ConfigError` if unbalanced."""
    spans: list[tuple[int, int]] = []
    opened: int | None = None
    for i, line in enumerate(lines):
        marker = line.strip()
        if marker == start and opened is None:
            opened = i
        elif marker in (start, end):
            if opened is None or marker == start:
                raise ConfigError(f'"{marker}" on line {i + 1} does not close a "{start}" line')
            spans.append((opened, i))
            opened = None
    if opened is not None:
        raise ConfigError(f'"{start}" on line {opened + 1} has no "{end}" after it')
    return spans


def merge_marked_block(text: str, *, start: str, end: str, body: Sequence[str]) -> str:
    """`text` with exactly one `start`..`end` block holding `body`; the other lines verbatim.

    The block stays where its first copy was (later copies are removed) or is appended
    after a blank line. The result ends with a newline.
    """
    newline = _newline(text)
    block = [line + newline for line in (start, *body, end)]
    lines = _split_lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += newline
    spans = _marked_spans(lines, start, end)
    if not spans:
        separator = [newline] if lines and lines[-1].strip() else []
        return "".join([*lines, *separator, *block])
    inside = {i for first, last in spans for i in range(first, last + 1)}
    first, last = spans[0]
    after = [line for i, line in enumerate(lines) if i > last and i not in inside]
    return "".join([*lines[:first], *block, *after])


# Taking memctl's entries back out (`memctl down`).


def remove_server(target: Mapping[str, Any], *, key: str, name: str) -> JSONObject:
    """`target` without server `name` in its `key` map; everything else as it was."""
    result = copy.deepcopy(dict(target))
    servers = result.get(key)
    if isinstance(servers, dict):
        servers.pop(name, None)
    return result


def remove_listed(target: Mapping[str, Any], *, key: str, value: str) -> JSONObject:
    """`target` without `value` in its `key` list; everything else as it was."""
    result = copy.deepcopy(dict(target))
    listed = result.get(key)
    if isinstance(listed, list) and value in listed:
        listed.remove(value)
    return result


def remove_hooks(
    target: Mapping[str, Any], *, signatures: Sequence[str] = OWNED_HOOK_SIGNATURES
) -> JSONObject:
    """`target` without memctl's hooks; an event (or `hooks`) left empty by that is dropped."""
    result = copy.deepcopy(dict(target))
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result
    for event in list(hooks):
        entries = hooks[event]
        if isinstance(entries, list):
            kept = _without_owned(entries, signatures)
            if kept:
                hooks[event] = kept
            elif entries:
                del hooks[event]
    if not hooks:
        del result["hooks"]
    return result


def remove_toml_table(text: str, table: Sequence[str]) -> str:
    """TOML `text` without the `[table]` block; everything else as it was."""
    table = tuple(table)
    before = _parse_toml(text, "the file")
    around = _around_table(text, table)
    if around is None:
        return text
    head, tail = around
    newline = _newline(text)
    if head.endswith(newline * 2) and (not tail or tail.startswith(newline)):
        head = head[: -len(newline)]  # the blank line that separated the block
    removed = head + tail
    if _parse_toml(removed, "the result") != _without_table(before, table):
        raise ConfigError(f"removing [{'.'.join(table)}] would change more than that table")
    return removed


def remove_marked_block(text: str, *, start: str, end: str) -> str:
    """`text` without any `start`..`end` block (nor the blank line put before it)."""
    lines = _split_lines(text)
    spans = _marked_spans(lines, start, end)
    inside = {i for first, last in spans for i in range(first, last + 1)}
    for first, _ in spans:
        if first > 0 and not lines[first - 1].strip():
            inside.add(first - 1)
    return "".join(line for i, line in enumerate(lines) if i not in inside)


def merge_toml_key(text: str, key: str, value: TomlValue) -> str:
    """TOML `text` with top-level `key` set to `value`; everything else as it was.

    An existing top-level assignment gets the new value where it stands (its comment
    stays); otherwise the key goes after the leading comments, before the first table.
    The result is parsed to prove that nothing but `key` changed.
    """
    before = _parse_toml(text, "the file")
    document = _document(text)
    if key in document:
        if isinstance(document[key], (Table, AoT)):
            raise ConfigError(f"{key} is a table in the file, not a value memctl can set")
        document[key] = value
        merged = document.as_string()
    else:
        newline = _newline(text)
        lines = _split_lines(text)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += newline
        at = 0
        while at < len(lines) and lines[at].lstrip().startswith("#"):
            at += 1
        lines.insert(at, tomlkit.dumps({key: value}).replace("\n", newline))
        merged = "".join(lines)
    after = _parse_toml(merged, "the merged file (is the key also set by a dotted key or a table?)")
    rest_before = {k: v for k, v in before.items() if k != key}
    if after.get(key) != value or {k: v for k, v in after.items() if k != key} != rest_before:
        raise ConfigError(f"setting {key} would change more than that key")
    return merged
