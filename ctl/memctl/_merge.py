"""Structural merges of client configuration: memctl's entries in, the user's left as they are.

Every function here is pure: it takes a parsed document (or a file's text) and returns a
new one, never mutating its input. Each replaces only what memctl owns, so running it
again on its own output changes nothing:

- `merge_servers`: one server in an MCP servers map (`.mcp.json`, `.cursor/mcp.json`, ...);
- `merge_hooks`: memctl's hooks in a hooks map (`.claude/settings.json`, `.agents/hooks.json`),
  recognised by their ownership signatures (the seed's too, so an upgrade replaces them);
- `ensure_listed`: a value in a list (`enabledMcpjsonServers`);
- `merge_toml_table`: one `[a.b]` table block in a TOML file (Codex's `config.toml`), text-level,
  so the user's comments, order and formatting survive;
- `merge_marked_block`: a block between two marker lines (`.gitignore`).

A document memctl cannot merge without losing the user's content (a servers map that is a
list, TOML that does not parse, an unclosed marker block) raises `ConfigError`.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

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


# TOML, at the level of text.


def _split_lines(text: str) -> list[str]:
    """Lines with their endings; only "\\n" ends a line (unlike `str.splitlines`)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _string_end(line: str, start: int, delimiter: str) -> int:
    """Index just past the string closing at or after `start`, or -1 if it goes on."""
    i = start
    while i < len(line):
        if delimiter[0] == '"' and line[i] == "\\":
            i += 2
        elif line.startswith(delimiter, i):
            end = i + len(delimiter)
            while len(delimiter) == 3 and end < len(line) and line[end] == delimiter[0] and end - i < 5:
                end += 1  # a multi-line string may end with up to two more quotes
            return end
        else:
            i += 1
    return -1


def _scan(line: str, open_string: str | None, depth: int) -> tuple[str | None, int]:
    """The lexer state after `line`: the multi-line string still open, the bracket depth."""
    i = 0
    while i < len(line):
        if open_string:
            end = _string_end(line, i, open_string)
            if end < 0:
                break
            i, open_string = end, None
            continue
        char = line[i]
        if char == "#":
            break
        quote = line[i : i + 3] if line[i : i + 3] in ('"""', "'''") else char
        if quote in ('"""', "'''", '"', "'"):
            open_string = quote
            i += len(quote)
            continue
        depth += (char in "[{") - (char in "]}")
        i += 1
    return (open_string if open_string in ('"""', "'''") else None), depth


def _header_path(line: str) -> tuple[str, ...] | None:
    """The key path of a `[table]` header line (`[[array]]` headers give None)."""
    if line.lstrip().startswith("[["):
        return None
    node: Any = tomllib.loads(line.strip())
    path: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        key, node = next(iter(node.items()))
        path.append(key)
    return tuple(path)


def _classify(lines: Sequence[str]) -> list[tuple[str, tuple[str, ...] | None]]:
    """Each line's kind ("header", "content" or "trivia": blank or comment) and header path."""
    kinds: list[tuple[str, tuple[str, ...] | None]] = []
    open_string: str | None = None
    depth = 0
    for line in lines:
        stripped = line.strip()
        if open_string or depth:
            kinds.append(("content", None))
        elif stripped.startswith("["):
            kinds.append(("header", _header_path(line)))
        else:
            kinds.append(("trivia" if not stripped or stripped.startswith("#") else "content", None))
        open_string, depth = _scan(line, open_string, depth)
    return kinds


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04x}", escaped) + '"'


def _toml_value(value: TomlValue) -> str:
    if isinstance(value, str):
        return _toml_string(value)
    return "[" + ", ".join(_toml_string(item) for item in value) + "]"


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_string(key)


def _render_table(table: Sequence[str], values: Mapping[str, TomlValue], newline: str) -> list[str]:
    header = "[" + ".".join(_toml_key(key) for key in table) + "]"
    return [header + newline] + [f"{_toml_key(k)} = {_toml_value(v)}{newline}" for k, v in values.items()]


def _parse_toml(text: str, what: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} is not valid TOML ({exc})") from exc


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


def _table_span(lines: Sequence[str], table: tuple[str, ...]) -> tuple[int, int] | None:
    """Lines `[start, end)` of `table`'s header and body, trailing blanks and comments excluded."""
    kinds = _classify(lines)
    starts = [i for i, (kind, path) in enumerate(kinds) if kind == "header" and path == table]
    if not starts:
        return None
    start = starts[0]
    following = (i for i in range(start + 1, len(lines)) if kinds[i][0] == "header")
    stop = next(following, len(lines))
    end = max(i for i in range(start, stop) if kinds[i][0] != "trivia") + 1
    return start, end


def merge_toml_table(text: str, table: Sequence[str], values: Mapping[str, TomlValue]) -> str:
    """TOML `text` with the `[table]` block holding exactly `values`; every other line as it was.

    An existing block (header to its last key, comments after it excluded) is replaced
    in place; otherwise the block is appended. The result is parsed to prove it is valid
    TOML and that nothing but `table` changed.
    """
    table = tuple(table)
    before = _parse_toml(text, "the file")
    newline = _newline(text)
    lines = _split_lines(text)
    block = _render_table(table, values, newline)
    span = _table_span(lines, table)
    if span is not None:
        merged = "".join([*lines[: span[0]], *block, *lines[span[1] :]])
    else:
        head = text if not text or text.endswith("\n") else text + newline
        separator = newline if head.strip() and not head.endswith(newline * 2) else ""
        merged = head + separator + "".join(block)
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
    """TOML `text` without the `[table]` block; every other line as it was."""
    table = tuple(table)
    before = _parse_toml(text, "the file")
    lines = _split_lines(text)
    span = _table_span(lines, table)
    if span is None:
        return text
    start, end = span
    if start > 0 and not lines[start - 1].strip() and (end == len(lines) or not lines[end].strip()):
        start -= 1  # the blank line that separated the block
    removed = "".join([*lines[:start], *lines[end:]])
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
    """TOML `text` with top-level `key` set to `value`; every other line as it was.

    An existing top-level assignment is replaced where it stands; otherwise the key goes
    after the leading comments, before the first table. The result is parsed to prove
    that nothing but `key` changed.
    """
    before = _parse_toml(text, "the file")
    newline = _newline(text)
    lines = _split_lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += newline
    kinds = _classify(lines)
    first_table = next((i for i, (kind, _) in enumerate(kinds) if kind == "header"), len(lines))
    assignment = f"{_toml_key(key)} = {_toml_value(value)}{newline}"
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    found = [i for i in range(first_table) if kinds[i][0] != "trivia" and pattern.match(lines[i])]
    if found:
        lines[found[0]] = assignment
    else:
        at = 0
        while at < first_table and kinds[at][0] == "trivia" and lines[at].strip():
            at += 1
        lines.insert(at, assignment)
    merged = "".join(lines)
    after = _parse_toml(merged, "the merged file (is the key also set by a dotted key or a table?)")
    rest_before = {k: v for k, v in before.items() if k != key}
    if after.get(key) != value or {k: v for k, v in after.items() if k != key} != rest_before:
        raise ConfigError(f"setting {key} would change more than that key")
    return merged
