"""Edits of JSON text that keep the user's bytes: formatting, key order, line endings, comments.

A path is a sequence of object keys (`str`) and array indices (`int`). Every function is
pure: it takes a document's text and returns new text, changing only the bytes of what
it edits. A new member or item goes last in its container, written in the file's style
(indent unit, `:` spacing, line ending; one-line containers stay on one line), and
removing it again gives back the original text exactly.

The text may be JSONC, as VS Code and Cursor write it: `//` and `/* */` comments and
trailing commas are read as whitespace and kept. A new last child goes after a comment
that ends the line of the one before it (that one's comma before the comment), and a
trailing comma stays trailing.

Text that is not valid JSONC (as Python's `json` reads it once comments and trailing commas
are blanked: the last of duplicate keys wins), a path through a scalar, or a key used on an
array (an index on an object) raise `ConfigError`, naming the path and what is there.
Blank text reads as `{}`; setting a member in it gives `json.dumps(..., indent=2)` text
with a trailing newline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memory_bridge import ConfigError

__all__ = [
    "JSONPath",
    "append_item",
    "edit_to",
    "get",
    "has",
    "loads",
    "remove_item",
    "remove_member",
    "set_member",
]

JSONPath = Sequence[str | int]

_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\r\n]*|/\*.*?\*/|/\*|[,\]}]', re.DOTALL)
"""What `_blank` looks at: strings (skipped whole), comments, an unclosed `/*`, commas, closers."""
_COMMENTED_TAIL = re.compile(
    r"[ \t]*(?:,[ \t]*)?(?:(?://[^\r\n]*|/\*(?:(?!\*/)[^\r\n])*\*/)[ \t]*)+(?=\r?\n)"
)
"""The rest of a line after a value when it holds a comment: an optional comma, comments."""
_SEPARATOR = re.compile(r"(?:\s|//[^\r\n]*|/\*.*?\*/)*,", re.DOTALL)
"""Up to the comma after a value, across whitespace and comments."""


@dataclass(frozen=True)
class _Node:
    """A value's span `[start, end)` in the text, and its children if it is a container."""

    kind: Literal["object", "array", "scalar"]
    start: int
    end: int
    children: tuple[_Child, ...] = ()


@dataclass(frozen=True)
class _Child:
    """A member (`key` set) or an item: from `start` (its key, or its value) to `node.end`."""

    key: str | None
    start: int
    key_end: int
    node: _Node


# Parsing: comments and trailing commas blanked, `json.loads` validates, then a trusting
# scan of the blanked text records the spans, which are those of the text itself.


def _blank(text: str) -> str:
    """`text` with comments and trailing commas as spaces (line breaks kept), so what is
    left is JSON with every value where it was; `JSONDecodeError` for an unclosed comment."""
    chars = list(text)
    comma: int | None = None
    for match in _TOKENS.finditer(text):
        token, start = match.group(), match.start()
        if token == "/*":
            raise json.JSONDecodeError("a /* comment is not closed", text, start)
        if token.startswith("/"):
            chars[start : match.end()] = re.sub(r"[^\r\n]", " ", token)
        elif token == ",":
            previous = start - 1
            while previous >= 0 and chars[previous] in _WHITESPACE:
                previous -= 1
            comma = start if previous >= 0 and chars[previous] not in "{[," else None
        elif token in ("}", "]"):
            if comma is not None and not "".join(chars[comma + 1 : start]).strip(_WHITESPACE):
                chars[comma] = " "
            comma = None
    return "".join(chars)


def loads(text: str, **options: Any) -> Any:
    """The value of JSONC `text`, read by `json.loads` with `options`; `JSONDecodeError`
    (positions in `text`) if it is not valid."""
    return json.loads(_blank(text), **options)


def _skip(text: str, i: int) -> int:
    """The index of the first non-whitespace character at or after `i`."""
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i


def _value(text: str, start: int) -> _Node:
    """The value starting at `start`."""
    if text[start] in "{[":
        return _container(text, start)
    _, end = _DECODER.raw_decode(text, start)
    return _Node("scalar", start, end)


def _container(text: str, start: int) -> _Node:
    """The object or array starting at `start`, with its children."""
    is_object = text[start] == "{"
    children: list[_Child] = []
    i = _skip(text, start + 1)
    while text[i] not in "}]":
        key, key_end = _DECODER.raw_decode(text, i) if is_object else (None, i)
        node = _value(text, _skip(text, _skip(text, key_end) + 1) if is_object else i)
        children.append(_Child(key, i, key_end, node))
        i = _skip(text, node.end)
        if text[i] == ",":
            i = _skip(text, i + 1)
    return _Node("object" if is_object else "array", start, i + 1, tuple(children))


def _or_empty(text: str) -> str:
    """`text`, or `{}` and a newline if it is blank."""
    return text if text.strip(_WHITESPACE) else "{}\n"


def _parse(text: str) -> _Node:
    """The syntax tree of `text`; `ConfigError` if it is not valid JSONC."""
    try:
        blank = _blank(text)
        json.loads(blank)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"the text is not valid JSON ({exc})") from exc
    return _value(blank, _skip(blank, 0))


# Paths.


def _where(path: JSONPath) -> str:
    """How a path reads in a message: `"hooks.Stop[0]"`, or "the document"."""
    if not path:
        return "the document"
    steps = [f"[{key}]" if isinstance(key, int) else f".{key}" for key in path]
    return '"' + "".join(steps).removeprefix(".") + '"'


def _kind(text: str, node: _Node) -> str:
    """What a node is, as an error message says it."""
    if node.kind != "scalar":
        return f"an {node.kind}"
    value = json.loads(text[node.start : node.end])
    names = {str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _missing(path: JSONPath, depth: int) -> LookupError:
    """The error for `path` lacking its step `depth`."""
    key, where = path[depth], _where(path[:depth])
    if isinstance(key, str):
        return KeyError(f'{where} has no member "{key}"')
    return IndexError(f"{where} has no item {key}")


def _child(text: str, node: _Node, where: JSONPath, key: str | int) -> _Child | None:
    """The child `key` of the container `node` found at `where`, or None."""
    expected = "object" if isinstance(key, str) else "array"
    if node.kind != expected:
        raise ConfigError(f"{_where(where)} is {_kind(text, node)}, expected an {expected}")
    if isinstance(key, str):
        return next((child for child in reversed(node.children) if child.key == key), None)
    return node.children[key] if 0 <= key < len(node.children) else None


def _trail(text: str, path: JSONPath) -> list[_Node]:
    """The root and the nodes along `path`, as far as they exist."""
    nodes = [_parse(text)]
    for depth, key in enumerate(path):
        child = _child(text, nodes[-1], path[:depth], key)
        if child is None:
            break
        nodes.append(child.node)
    return nodes


def _trail_to(text: str, path: JSONPath, kind: Literal["object", "array"]) -> list[_Node] | None:
    """The trail to the container at `path`, None if absent; `ConfigError` if it is not a `kind`."""
    nodes = _trail(text, path)
    if len(nodes) <= len(path):
        return None
    if nodes[-1].kind != kind:
        raise ConfigError(f"{_where(path)} is {_kind(text, nodes[-1])}, expected an {kind}")
    return nodes


# The file's style.


@dataclass(frozen=True)
class _Style:
    """How new values are written: line ending, indent unit, `:` spacing, one line or not."""

    newline: str
    unit: str
    colon: str
    compact: bool

    def render(self, value: Any, indent: str) -> str:
        """`value` as JSON text, for a line indented by `indent`."""
        if self.compact:
            return json.dumps(value, ensure_ascii=False, separators=("," + self.space, self.colon))
        text = json.dumps(value, ensure_ascii=False, indent=self.unit, separators=(",", self.colon))
        return text.replace("\n", self.newline + indent)

    def child(self, key: str | None, value: Any, indent: str) -> str:
        """A member (or an item if `key` is None) as JSON text."""
        rendered = self.render(value, indent)
        return rendered if key is None else json.dumps(key, ensure_ascii=False) + self.colon + rendered

    @property
    def space(self) -> str:
        """What follows a `,` when no line break does: what follows the `:`."""
        return self.colon.partition(":")[2]


def _indent_unit(text: str) -> str:
    """The shortest indent of a line holding JSON, made of spaces only or tabs only; two
    spaces if none."""
    lines = [line for line in _blank(text).split("\n")[1:] if line.strip(_WHITESPACE)]
    indents = [line[: len(line) - len(line.lstrip(" \t"))] for line in lines]
    units = [indent for indent in indents if indent and len(set(indent)) == 1]
    return min(units, key=len) if units else "  "


def _colon(text: str, trail: Sequence[_Node]) -> str:
    """The `:` with its spacing, as in the last member of the nearest non-empty object."""
    for node in reversed(trail):
        if node.kind == "object" and node.children:
            last = node.children[-1]
            colon = text[last.key_end : last.node.start]
            return colon if colon.strip(" \t") == ":" else ": "
    return ": "


def _compact(text: str, trail: Sequence[_Node]) -> bool:
    """Whether the last container is on one line: it, or if empty its nearest non-empty parent."""
    for node in reversed(trail):
        if text.find("\n", node.start, node.end) >= 0:
            return False
        if node.children:
            return True
    return False


def _style(text: str, trail: Sequence[_Node]) -> _Style:
    """The style of new values in the last container of `trail`."""
    newline = "\r\n" if "\r\n" in text else "\n"
    return _Style(newline, _indent_unit(text), _colon(text, trail), _compact(text, trail))


def _line_indent(text: str, position: int) -> str:
    """The indent of the line `position` is on."""
    line = text[text.rfind("\n", 0, position) + 1 : position]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _gap_before(text: str, position: int) -> str:
    """The whitespace just before `position`."""
    return text[len(text[:position].rstrip(_WHITESPACE)) : position]


# Edits: an insertion at one point, and the deletion that undoes it.


def _insert(text: str, trail: Sequence[_Node], key: str | None, value: Any) -> str:
    """`text` with a last child (member `key`, or an item if None) in container `trail[-1]`."""
    container, style = trail[-1], _style(text, trail)
    if container.children:
        last = container.children[-1]
        gap = _gap_before(text, last.start)
        if not gap and len(container.children) == 1:
            gap = style.space
        at = last.node.end
        child = style.child(key, value, _line_indent(text, last.start))
        tail = _COMMENTED_TAIL.match(text, at)
        if tail is None:
            return text[:at] + "," + gap + child + text[at:]
        # A comment ends the last child's line: the new child goes on a line after it.
        line_end = tail.end()
        gap = gap.lstrip(" \t")
        if "\n" not in gap:
            indent = _line_indent(text, last.start)
            opening_line = text.rfind("\n", 0, last.start) < container.start
            gap = style.newline + indent + (style.unit if opening_line else "")
            child = style.child(key, value, gap.lstrip("\r\n"))
        if tail.group().lstrip(" \t").startswith(","):
            return text[:line_end] + gap + child + "," + text[line_end:]
        return text[:at] + "," + text[at:line_end] + gap + child + text[line_end:]
    at = container.end - 1
    inside = text[container.start + 1 : at]
    outer = _line_indent(text, container.start)
    inner = outer + style.unit
    if style.compact:
        lead = inside[: len(inside) - len(inside.lstrip(_WHITESPACE))]
        return text[:at] + style.child(key, value, "") + lead + text[at:]
    if inside.strip(_WHITESPACE):  # comments only: the child goes after the last of them
        at = len(text[:at].rstrip(_WHITESPACE))
        if "\n" not in inside:
            return text[:at] + " " + style.child(key, value, outer) + text[at:]
        return text[:at] + style.newline + inner + style.child(key, value, inner) + text[at:]
    piece = style.newline + inner + style.child(key, value, inner) + style.newline + outer
    return text[:at] + piece + text[at:]


def _without_last_line(gap: str) -> str:
    """Whitespace `gap` up to its last line break, or nothing if it has none."""
    cut = gap.rfind("\n")
    if cut > 0 and gap[cut - 1] == "\r":
        cut -= 1
    return gap[: max(cut, 0)]


def _cut(text: str, start: int, end: int) -> str:
    """`text` without `[start, end)`, keeping the line break that ends a `//` comment before it."""
    line_start = text.rfind("\n", 0, start) + 1
    tokens = _TOKENS.finditer(text, line_start, start)
    commented = any(token.group().startswith("//") and token.end() == start for token in tokens)
    removed, tail = text[start:end], text[end:]
    if commented and "\n" in removed and not tail.lstrip(" \t").startswith(("\n", "\r")):
        return text[:start] + removed[: removed.index("\n") + 1] + tail
    return text[:start] + tail


def _comma_after(text: str, position: int) -> int:
    """Where the comma after the value ending at `position` is, across whitespace and comments."""
    separator = _SEPARATOR.match(text, position)
    assert separator is not None, "the blanked text has a comma there"
    return separator.end() - 1


def _remove(text: str, container: _Node, index: int) -> str:
    """`text` without child `index` of `container` and its separator.

    A child on a line of its own goes with that line and its comma; comments stay."""
    children = container.children
    child = children[index]
    start = len(text[: child.start].rstrip(_WHITESPACE))
    own_line = "\n" in text[start : child.start]
    if index < len(children) - 1:
        following = children[index + 1].start
        after = _comma_after(text, child.node.end) + 1
        if own_line and text[after:following].strip(_WHITESPACE):  # comments after it stay
            return _cut(text, start, after)
        return text[: child.start] + text[following:]
    if len(children) > 1 and not own_line:
        return text[: children[index - 1].node.end] + text[child.node.end :]
    if len(children) > 1:
        if text.startswith(",", child.node.end):  # its trailing comma goes: the separator becomes one
            return _cut(text, start, child.node.end + 1)
        comma = _comma_after(text, children[index - 1].node.end)
        cut = _cut(text, start, child.node.end)
        return cut[:comma] + cut[comma + 1 :]
    inside_start, inside_end = container.start + 1, container.end - 1
    trailing = _SEPARATOR.match(text, child.node.end, inside_end)
    if trailing is not None:
        text = text[: trailing.end() - 1] + text[trailing.end() :]
        inside_end -= 1
    before, rest = text[inside_start : child.start], text[child.node.end : inside_end]
    if (before + rest).strip(_WHITESPACE):  # comments around it stay
        return _cut(text, start, child.node.end)
    if text.find("\n", container.start, inside_end) < 0:
        return text[:inside_start] + text[child.node.end :]
    return text[:inside_start] + _without_last_line(before) + text[inside_end:]


def _created(path: JSONPath, depth: int, value: Any) -> tuple[str, Any]:
    """The member that creates `path[depth:]` holding `value`: its key and value."""
    key = path[depth]
    if not isinstance(key, str):
        raise _missing(path, depth)
    if depth + 1 == len(path):
        return key, value
    inner_key, inner = _created(path, depth + 1, value)
    return key, {inner_key: inner}


def _same(old: Any, new: Any) -> bool:
    """Whether two values are the same JSON, key order and number types included."""
    return json.dumps(old) == json.dumps(new)


# The API.


def get(text: str, path: JSONPath) -> Any:
    """The value at `path`; `KeyError` or `IndexError` if it is absent."""
    text = _or_empty(text)
    nodes = _trail(text, path)
    if len(nodes) <= len(path):
        raise _missing(path, len(nodes) - 1)
    return loads(text[nodes[-1].start : nodes[-1].end])


def has(text: str, path: JSONPath) -> bool:
    """Whether there is a value at `path`."""
    return len(_trail(_or_empty(text), path)) > len(path)


def set_member(text: str, path: JSONPath, value: Any) -> str:
    """`text` with `value` at `path`; missing objects on the way are created.

    An existing value is replaced where it stands (left as it is if equal, formatting
    included); a new member goes last in its object. `path` may end with the index of
    an existing array item, which is then replaced.
    """
    if not path:
        raise ValueError("set_member needs a non-empty path")
    text = _or_empty(text)
    nodes = _trail(text, path)
    if len(nodes) > len(path):
        old = nodes[-1]
        if _same(loads(text[old.start : old.end]), value):
            return text
        rendered = _style(text, nodes[:-1]).render(value, _line_indent(text, old.start))
        return text[: old.start] + rendered + text[old.end :]
    key, created = _created(path, len(nodes) - 1, value)
    return _insert(text, nodes, key, created)


def remove_member(text: str, path: JSONPath) -> str:
    """`text` without the member at `path` (every copy of a duplicated key); as is if absent."""
    key = path[-1] if path else None
    if not isinstance(key, str):
        raise ValueError(f"remove_member needs a path ending with a key, not {list(path)!r}")
    trail = _trail_to(_or_empty(text), path[:-1], "object")
    indices = [i for i, child in enumerate(trail[-1].children if trail else ()) if child.key == key]
    if trail is None or not indices:
        return text
    return remove_member(_remove(text, trail[-1], indices[-1]), path)


def append_item(text: str, path: JSONPath, value: Any) -> str:
    """`text` with `value` last in the array at `path`, created (with its parents) if absent."""
    text = _or_empty(text)
    trail = _trail_to(text, path, "array")
    return _insert(text, trail, None, value) if trail else set_member(text, path, [value])


def remove_item(text: str, path: JSONPath) -> str:
    """`text` without the array item at `path` (ending with its index); as is if absent."""
    index = path[-1] if path else None
    if not isinstance(index, int):
        raise ValueError(f"remove_item needs a path ending with an index, not {list(path)!r}")
    trail = _trail_to(_or_empty(text), path[:-1], "array")
    if trail is None or not 0 <= index < len(trail[-1].children):
        return text
    return _remove(text, trail[-1], index)


def _edit_list(text: str, path: tuple[str | int, ...], current: list[Any], desired: list[Any]) -> str:
    """Items kept in order where they match, changed in place where both are objects
    that differ, removed where gone, and new ones appended."""
    kept = 0
    position = 0
    for item in current:
        here = (*path, position)
        if kept < len(desired) and _same(item, desired[kept]):
            kept, position = kept + 1, position + 1
        elif (
            kept < len(desired)
            and isinstance(item, dict)
            and isinstance(desired[kept], dict)
            and not any(_same(item, later) for later in desired[kept:])
        ):
            text = _edit(text, here, item, desired[kept])
            kept, position = kept + 1, position + 1
        else:
            text = remove_item(text, here)
    for item in desired[kept:]:
        text = append_item(text, path, item)
    return text


def _edit(text: str, path: tuple[str | int, ...], current: Any, desired: Any) -> str:
    if _same(current, desired):
        return text
    if isinstance(current, dict) and isinstance(desired, dict):
        for key in current:
            if key not in desired:
                text = remove_member(text, (*path, key))
        for key, value in desired.items():
            text = (
                _edit(text, (*path, key), current[key], value)
                if key in current
                else set_member(text, (*path, key), value)
            )
        return text
    if isinstance(current, list) and isinstance(desired, list):
        return _edit_list(text, path, current, desired)
    return set_member(text, path, desired)


def edit_to(text: str, desired: dict[str, Any]) -> str:
    """`text` edited in place until it holds `desired`, touching only what differs.

    Members that stay keep their bytes and their order; new ones go last; array items are
    kept, changed, removed or appended (a reordering shows as removals and appends).
    """
    return _edit(text, (), loads(_or_empty(text)), desired)
