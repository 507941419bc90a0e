"""JSON text edits: only the edited bytes change, in the file's style, and removal undoes insertion."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.provision._jsontext import (
    JSONPath,
    append_item,
    edit_to,
    get,
    has,
    loads,
    remove_item,
    remove_member,
    set_member,
)
from memory_bridge import ConfigError

from .json_strategies import keys, values

PROPERTY = settings(max_examples=200, deadline=None)
ENTRY = {"command": "memctl", "args": ["serve"]}
SENTINEL = "memctl's sentinel, longer than any generated string"


def ordered(value: Any) -> str:
    """A value's JSON text: equal only if keys are in the same order too."""
    return json.dumps(value, ensure_ascii=False)


def dumps(value: Any, indent: int | str | None = 2, separators: tuple[str, str] | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators)


# Reading.


def test_get_and_has_follow_keys_and_indices() -> None:
    text = '{"a": [1, {"b": null}], "a2": "x"}'
    assert get(text, ("a", 1, "b")) is None
    assert get(text, ()) == {"a": [1, {"b": None}], "a2": "x"}
    assert has(text, ("a", 1, "b"))
    assert not has(text, ("a", 2))
    assert not has(text, ("c", "d"))
    assert get(" \n", ()) == {}


def test_get_reads_the_last_of_duplicate_keys_as_json_does() -> None:
    assert get('{"a": 1, "a": 2}', ("a",)) == 2


@pytest.mark.parametrize(
    ("path", "error", "message"),
    [
        (("c",), KeyError, 'the document has no member "c"'),
        (("a", 5), IndexError, '"a" has no item 5'),
        (("a", 1, "c"), KeyError, '"a[1]" has no member "c"'),
    ],
)
def test_get_of_an_absent_value_is_a_lookup_error(
    path: JSONPath, error: type[LookupError], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        get('{"a": [1, {"b": null}]}', path)


# Setting members.


def test_an_existing_value_is_replaced_where_it_stands() -> None:
    text = '{\n    "a" : 1,\n    "b": [1,2],   "c": 3\n}'
    assert set_member(text, ("a",), True) == text.replace("1,", "true,", 1)
    assert set_member(text, ("b",), {"x": [1]}) == (
        '{\n    "a" : 1,\n    "b": {\n        "x": [\n            1\n        ]\n    },   "c": 3\n}'
    )


def test_setting_an_equal_value_keeps_the_users_spelling() -> None:
    text = '{"a": {"x": 1.0e2,  "y": [ ]}}'
    assert set_member(text, ("a",), {"x": 100.0, "y": []}) == text
    assert set_member(text, ("a",), {"y": [], "x": 100.0}) != text, "key order is part of the value"
    assert set_member(text, ("a", "x"), 100) != text, "so is the number's type"


@pytest.mark.parametrize("unit", ["  ", "    ", "\t"])
def test_a_new_member_goes_last_in_the_files_indent(unit: str) -> None:
    text = dumps({"a": 1, "servers": {"other": {}}}, indent=unit)
    expected = {"a": 1, "servers": {"other": {}, "memory": ENTRY}}
    assert set_member(text, ("servers", "memory"), ENTRY) == dumps(expected, indent=unit)


def test_missing_parents_are_created_as_nested_objects() -> None:
    text = '{\n  "a": 1\n}\n'
    assert set_member(text, ("x", "y", "z"), [1]) == dumps({"a": 1, "x": {"y": {"z": [1]}}}) + "\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', '{"a": 1, "mcpServers": {"memory": {"command": "memctl", "args": ["serve"]}}}'),
        ('{"a":1}', '{"a":1,"mcpServers":{"memory":{"command":"memctl","args":["serve"]}}}'),
        ('{ "a": 1 }', '{ "a": 1, "mcpServers": {"memory": {"command": "memctl", "args": ["serve"]}} }'),
        ('{"mcpServers": {}}', '{"mcpServers": {"memory": {"command": "memctl", "args": ["serve"]}}}'),
        ('{"mcpServers": { }}', '{"mcpServers": { "memory": {"command": "memctl", "args": ["serve"]} }}'),
    ],
)
def test_a_one_line_object_gets_a_one_line_member(text: str, expected: str) -> None:
    path = ("mcpServers", "memory")
    assert set_member(text, path, ENTRY) == expected
    assert remove_member(expected, path if has(text, path[:1]) else path[:1]) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{}", '{\n  "a": 1\n}'),
        ("{}\n", '{\n  "a": 1\n}\n'),
        ("{ }", '{ \n  "a": 1\n}'),
        ("{\n}\n", '{\n\n  "a": 1\n}\n'),
        ("", '{\n  "a": 1\n}\n'),
        (" \n ", '{\n  "a": 1\n}\n'),
    ],
)
def test_an_empty_document_gets_a_pretty_member(text: str, expected: str) -> None:
    assert set_member(text, ("a",), 1) == expected
    if text.strip():
        assert remove_member(expected, ("a",)) == text


def test_blank_text_becomes_json_dumps_output() -> None:
    value = {"command": "memctl", "args": ["serve", "--project", "/work/app"], "env": {}}
    expected = {"mcpServers": {"memory": value}}
    assert set_member("", ("mcpServers", "memory"), value) == dumps(expected) + "\n"


def test_crlf_and_a_missing_final_newline_are_kept() -> None:
    text = '{\r\n  "a": {\r\n    "b": 1\r\n  }\r\n}'
    result = set_member(text, ("a", "c"), {"d": [1]})
    added = '"c": {\r\n      "d": [\r\n        1\r\n      ]\r\n    }'
    assert result == '{\r\n  "a": {\r\n    "b": 1,\r\n    ' + added + "\r\n  }\r\n}"
    assert "\n" not in result.replace("\r\n", "")


def test_unicode_is_written_as_is_and_the_users_escapes_are_kept() -> None:
    text = '{\n  "caf\\u00e9": "\\ud83d\\ude00",\n  "名前": "値"\n}\n'
    result = set_member(text, ("ключ",), {"😀": "é\u2028\n"})
    assert result == text[:-3] + ',\n  "ключ": {\n    "😀": "é\u2028\\n"\n  }\n}\n'
    assert json.loads(result)["café"] == "😀"
    assert remove_member(result, ("ключ",)) == text


def test_a_nested_value_is_indented_from_its_own_line() -> None:
    text = '{\n  "hooks": {"Stop": [\n      {"a": 1}\n    ]}\n}'
    result = set_member(text, ("hooks", "Stop", 0), {"a": [2]})
    assert (
        result
        == '{\n  "hooks": {"Stop": [\n      {\n        "a": [\n          2\n        ]\n      }\n    ]}\n}'
    )


def test_a_member_after_one_on_the_opening_line_is_spaced_like_the_colon() -> None:
    assert set_member('{"a": [\n  1\n]}', ("b",), 2) == '{"a": [\n  1\n], "b": 2}'
    assert set_member('{"a":[\n  1\n]}', ("b",), 2) == '{"a":[\n  1\n],"b":2}'


# Removing members.

PRETTY = '{\n  "a": 1,\n  "b": {\n    "x": true\n  },\n  "c": [3]\n}\n'


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("a", '{\n  "b": {\n    "x": true\n  },\n  "c": [3]\n}\n'),
        ("b", '{\n  "a": 1,\n  "c": [3]\n}\n'),
        ("c", '{\n  "a": 1,\n  "b": {\n    "x": true\n  }\n}\n'),
    ],
)
def test_removing_a_first_middle_or_last_member_keeps_the_layout(key: str, expected: str) -> None:
    assert remove_member(PRETTY, (key,)) == expected


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        ('{"a": 1, "b": 2}', ("a",), '{"b": 2}'),
        ('{"b": 2 , "a": 1}', ("a",), '{"b": 2}'),
        ('{ "a" : 1 }', ("a",), "{ }"),
        ('{\n  "x": {\n    "a": 1\n  }\n}', ("x", "a"), '{\n  "x": {}\n}'),
        ('{\n\t"a": 1,\n\n\t"b": 2\n}', ("a",), '{\n\t"b": 2\n}'),
        ('{"b": 2,\n "a": [\n  1\n ]}', ("a",), '{"b": 2}'),
        ('{"a": 1, "b": 2, "a": 3}', ("a",), '{"b": 2}'),
    ],
)
def test_removing_from_human_formatting_leaves_sensible_json(
    text: str, path: JSONPath, expected: str
) -> None:
    assert remove_member(text, path) == expected


def test_removing_an_absent_member_changes_nothing() -> None:
    for text in ("", "{}", '{"a": {}}', '{"a": 1}'):
        assert remove_member(text, ("b",)) == text
        assert remove_member(text, ("b", "c")) == text


# Arrays.


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"enabled": ["a"]}', '{"enabled": ["a", "memory"]}'),
        ('{"enabled":["a"]}', '{"enabled":["a","memory"]}'),
        ('{"enabled": []}', '{"enabled": ["memory"]}'),
        ('{\n  "enabled": []\n}', '{\n  "enabled": [\n    "memory"\n  ]\n}'),
        ('{\n  "enabled": [\n    "a"\n  ]\n}', '{\n  "enabled": [\n    "a",\n    "memory"\n  ]\n}'),
        ('{\n  "enabled": ["a", "b"]\n}', '{\n  "enabled": ["a", "b", "memory"]\n}'),
    ],
)
def test_an_item_goes_last_in_the_arrays_style(text: str, expected: str) -> None:
    assert append_item(text, ("enabled",), "memory") == expected
    assert remove_item(expected, ("enabled", len(get(expected, ("enabled",))) - 1)) == text


def test_appending_to_an_absent_array_creates_it() -> None:
    assert append_item('{"a": 1}', ("x", "list"), 1) == '{"a": 1, "x": {"list": [1]}}'
    assert append_item("", ("list",), {"k": "v"}) == dumps({"list": [{"k": "v"}]}) + "\n"
    assert append_item("[]", (), 1) == "[\n  1\n]"


@pytest.mark.parametrize(
    ("index", "expected"),
    [(0, '[\n  "b",\n  "c"\n]'), (1, '[\n  "a",\n  "c"\n]'), (2, '[\n  "a",\n  "b"\n]'), (3, None)],
)
def test_removing_an_item(index: int, expected: str | None) -> None:
    text = '[\n  "a",\n  "b",\n  "c"\n]'
    assert remove_item(text, (index,)) == (expected or text)


# Refusals.


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda: set_member('{"mcpServers": []}', ("mcpServers", "memory"), 1), '"mcpServers" is an array'),
        (lambda: set_member("[1]", ("a",), 1), "the document is an array, expected an object"),
        (lambda: set_member('{"a": "s"}', ("a", "b", "c"), 1), '"a" is a string, expected an object'),
        (lambda: set_member('{"a": {"b": 0}}', ("a", "b", "c"), 1), '"a.b" is a number'),
        (lambda: append_item('{"a": {}}', ("a",), 1), '"a" is an object, expected an array'),
        (lambda: append_item('{"a": [null]}', ("a", 0), 1), r'"a\[0\]" is null, expected an array'),
        (lambda: remove_member('{"a": [true]}', ("a", "b")), '"a" is an array, expected an object'),
        (lambda: remove_item('{"a": {"b": false}}', ("a", "b", 0)), '"a.b" is a boolean'),
        (lambda: get('{"a": 1', ()), r"not valid JSON \(Expecting ',' delimiter: line 1 column 8"),
        (lambda: set_member("{'a': 1}", ("a",), 1), "not valid JSON"),
        (lambda: set_member('{"a": [1,,]}', ("b",), 1), "not valid JSON"),
        (lambda: set_member('{"a": 1} /* open', ("b",), 1), r"a /\* comment is not closed: line 1"),
    ],
)
def test_edits_that_cannot_be_made_are_refused(edit: Callable[[], object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        edit()


def test_paths_must_end_as_the_edit_needs() -> None:
    with pytest.raises(ValueError, match="non-empty path"):
        set_member("{}", (), 1)
    with pytest.raises(ValueError, match="ending with a key"):
        remove_member('{"a": [1]}', ("a", 0))
    with pytest.raises(ValueError, match="ending with an index"):
        remove_item('{"a": [1]}', ("a",))
    with pytest.raises(IndexError, match='"a" has no item 1'):
        set_member('{"a": [1]}', ("a", 1, "b"), 1)


# Properties, over arbitrary documents in arbitrary styles.

objects = st.dictionaries(keys, values, max_size=4)
with_array = st.builds(
    lambda rest, key, array: {**rest, key: array}, objects, keys, st.lists(values, max_size=3)
)
with_arrays = with_array | st.lists(values, max_size=4)
DUMPS_STYLES = [
    {"indent": indent, "separators": (",", colon)} for indent in (0, 2, 4, "\t") for colon in (": ", ":")
] + [{"indent": None, "separators": separators} for separators in ((", ", ": "), (",", ":"))]
GAPS = st.sampled_from(["", "", " ", "  ", "\t", "\n", "\n  ", "\n\t", " \n    "])


JSONC_GAPS = GAPS | st.sampled_from(["/* c */", " // c\n  ", "\n  // c,}]\n  ", " /* a\n b */\n\t"])
"""Whitespace and comments, as VS Code and Cursor allow them between tokens."""


def ragged(draw: st.DrawFn, value: Any, gaps: st.SearchStrategy[str] = GAPS, commas: bool = False) -> str:
    """`value` as JSON text with arbitrary `gaps` between its tokens; trailing `commas` if asked."""
    trailing = "," + draw(gaps) if commas and draw(st.booleans()) else ""
    if isinstance(value, dict):
        members = [
            draw(gaps)
            + dumps(k, None)
            + draw(gaps)
            + ":"
            + draw(gaps)
            + ragged(draw, v, gaps, commas)
            + draw(gaps)
            for k, v in value.items()
        ]
        return "{" + (",".join(members) + trailing if members else draw(gaps)) + "}"
    if isinstance(value, list):
        items = [draw(gaps) + ragged(draw, item, gaps, commas) + draw(gaps) for item in value]
        return "[" + (",".join(items) + trailing if items else draw(gaps)) + "]"
    return json.dumps(value, ensure_ascii=draw(st.booleans()))


@st.composite
def rendered(draw: st.DrawFn, value: Any) -> str:
    """`value` as a user's file: `json.dumps` in some style, or ragged, in either line ending."""
    style = draw(st.sampled_from([*DUMPS_STYLES, None]))
    if style is None:
        text = draw(GAPS) + ragged(draw, value) + draw(GAPS)
    else:
        text = json.dumps(value, ensure_ascii=draw(st.booleans()), **style)
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return (text + draw(st.sampled_from(["", "\n"]))).replace("\n", newline)


def containers(
    value: Any, kind: type | tuple[type, ...], path: tuple[str | int, ...] = ()
) -> Iterator[tuple[str | int, ...]]:
    """The paths of every `kind` (dict or list) in `value`."""
    if isinstance(value, kind):
        yield path
    children = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    for key, child in children:
        yield from containers(child, kind, (*path, key))


def at(value: Any, path: JSONPath) -> Any:
    for key in path:
        value = value[key]
    return value


def is_insertion(before: str, after: str) -> bool:
    """Whether `after` is `before` with text inserted at one point (after their common prefix)."""
    pairs = enumerate(zip(before, after, strict=False))
    prefix = next((i for i, (old, new) in pairs if old != new), min(len(before), len(after)))
    return len(after) >= len(before) and after.endswith(before[prefix:])


Case = tuple[Any, str, tuple[str | int, ...], Any]


@st.composite
def new_members(draw: st.DrawFn, documents: st.SearchStrategy[Any] = objects) -> Case:
    """A document, its text, the path of a member it lacks (in an existing object), a value."""
    document = draw(documents)
    parent = draw(st.sampled_from(list(containers(document, dict))))
    key = draw(keys.filter(lambda k: k not in at(document, parent)))
    return document, draw(rendered(document)), (*parent, key), draw(values)


@st.composite
def new_items(draw: st.DrawFn, documents: st.SearchStrategy[Any] = with_arrays) -> Case:
    """A document, its text, the path of one of its arrays, a value."""
    document = draw(documents)
    array = draw(st.sampled_from(list(containers(document, list))))
    return document, draw(rendered(document)), array, draw(values)


@PROPERTY
@given(new_members())
def test_a_new_member_is_an_insertion_that_removal_undoes(case: Case) -> None:
    document, text, path, value = case
    result = set_member(text, path, value)
    assert is_insertion(text, result)
    assert remove_member(result, path) == text
    expected = copy.deepcopy(document)
    at(expected, path[:-1])[path[-1]] = value
    assert ordered(json.loads(result)) == ordered(expected)


@PROPERTY
@given(new_items())
def test_a_new_item_is_an_insertion_that_removal_undoes(case: Case) -> None:
    document, text, path, value = case
    result = append_item(text, path, value)
    assert is_insertion(text, result)
    expected = copy.deepcopy(document)
    at(expected, path).append(value)
    assert ordered(json.loads(result)) == ordered(expected)
    assert remove_item(result, (*path, len(at(expected, path)) - 1)) == text


@PROPERTY
@given(st.data())
def test_replacing_a_value_changes_only_its_bytes(data: st.DataObject) -> None:
    document = data.draw(objects.filter(bool))
    parent = data.draw(st.sampled_from([p for p in containers(document, dict) if at(document, p)]))
    key = data.draw(st.sampled_from(list(at(document, parent))))
    text, value, path = data.draw(rendered(document)), data.draw(values), (*parent, key)
    marked = set_member(text, path, SENTINEL)
    start = marked.index(json.dumps(SENTINEL))
    before, after = marked[:start], marked[start + len(json.dumps(SENTINEL)) :]
    assert text.startswith(before)
    assert text.endswith(after)
    assert ordered(json.loads(text[start : len(text) - len(after)])) == ordered(at(document, path))
    result = set_member(text, path, value)
    assert result.startswith(before)
    assert result.endswith(after)
    assert ordered(json.loads(result[start : len(result) - len(after)])) == ordered(value)
    assert set_member(result, path, value) == result


@PROPERTY
@given(new_members(), values)
def test_setting_a_member_twice_is_setting_it_once(case: Case, other: Any) -> None:
    _, text, path, value = case
    once = set_member(text, path, value)
    assert set_member(once, path, value) == once
    again = set_member(set_member(text, path, other), path, value)
    assert ordered(json.loads(again)) == ordered(json.loads(once))


@PROPERTY
@given(st.data())
def test_removing_any_member_or_item_keeps_the_rest(data: st.DataObject) -> None:
    document = data.draw(with_array)
    text = data.draw(rendered(document))
    parent = data.draw(st.sampled_from([p for p in containers(document, (dict, list)) if at(document, p)]))
    container = at(document, parent)
    key = data.draw(
        st.sampled_from(list(container) if isinstance(container, dict) else range(len(container)))
    )
    remove = remove_member if isinstance(key, str) else remove_item
    result = remove(text, (*parent, key))
    expected = copy.deepcopy(document)
    del at(expected, parent)[key]
    assert ordered(json.loads(result)) == ordered(expected)


@PROPERTY
@given(st.sampled_from(DUMPS_STYLES[2:]), new_members(objects.filter(bool)), new_items(with_array))
def test_edits_of_json_dumps_output_are_json_dumps_output(
    style: dict[str, Any], member: Case, item: Case
) -> None:
    """In a file `json.dumps` wrote (any indent but 0), an edit gives what it writes for the result."""
    document, _, path, value = member
    text = json.dumps(document, ensure_ascii=False, **style)
    expected = copy.deepcopy(document)
    at(expected, path[:-1])[path[-1]] = value
    assert set_member(text, path, value) == json.dumps(expected, ensure_ascii=False, **style)

    document, _, path, value = item
    text = json.dumps(document, ensure_ascii=False, **style)
    expected = copy.deepcopy(document)
    at(expected, path).append(value)
    assert append_item(text, path, value) == json.dumps(expected, ensure_ascii=False, **style)


@settings(max_examples=200, deadline=None)
@given(st.data(), objects, objects)
def test_edit_to_reaches_any_document_and_keeps_the_text_when_nothing_changes(
    data: st.DataObject, document: dict[str, Any], other: dict[str, Any]
) -> None:
    text = data.draw(rendered(document))
    assert edit_to(text, json.loads(text)) == text, "nothing to change: the bytes stay"
    desired = {**{k: v for k, v in document.items() if k not in other}, **other}
    edited = edit_to(text, desired)
    assert json.loads(edited) == desired
    assert edit_to(edited, desired) == edited


@st.composite
def commented(draw: st.DrawFn, documents: st.SearchStrategy[Any] = objects) -> Case:
    """A document as JSONC (comments, trailing commas), the path of a member it lacks, a value."""
    document, _, path, value = draw(new_members(documents))
    text = draw(JSONC_GAPS) + ragged(draw, document, JSONC_GAPS, commas=True) + "\n"
    return document, text, path, value


def comments(text: str) -> list[str]:
    """The comments in JSONC text, in order."""
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', text, re.DOTALL)
    return [token for token in tokens if token.startswith("/")]


@PROPERTY
@given(commented())
def test_jsonc_keeps_its_comments_through_an_insertion_that_removal_undoes(case: Case) -> None:
    document, text, path, value = case
    assert ordered(loads(text)) == ordered(document)
    result = set_member(text, path, value)
    assert comments(result) == comments(text)
    expected = copy.deepcopy(document)
    at(expected, path[:-1])[path[-1]] = value
    assert ordered(loads(result)) == ordered(expected)
    assert set_member(result, path, value) == result
    assert remove_member(result, path) == text


@PROPERTY
@given(st.data())
def test_removing_any_member_or_item_of_jsonc_keeps_the_rest(data: st.DataObject) -> None:
    document = data.draw(with_array)
    text = data.draw(JSONC_GAPS) + ragged(data.draw, document, JSONC_GAPS, commas=True)
    parent = data.draw(st.sampled_from([p for p in containers(document, (dict, list)) if at(document, p)]))
    container = at(document, parent)
    key = data.draw(
        st.sampled_from(list(container) if isinstance(container, dict) else range(len(container)))
    )
    remove = remove_member if isinstance(key, str) else remove_item
    expected = copy.deepcopy(document)
    del at(expected, parent)[key]
    assert ordered(loads(remove(text, (*parent, key)))) == ordered(expected)


@PROPERTY
@given(commented(objects.filter(bool)), objects)
def test_edit_to_reaches_any_document_from_jsonc(case: Case, other: dict[str, Any]) -> None:
    document, text, _, _ = case
    assert edit_to(text, loads(text)) == text
    desired = {**{k: v for k, v in document.items() if k not in other}, **other}
    edited = edit_to(text, desired)
    assert loads(edited) == desired
    assert edit_to(edited, desired) == edited


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1 // one\n}', '{"a": 1, // one\n  "b": 2\n}'),
        ('{"a": 1, // one\n}', '{"a": 1, // one\n  "b": 2,\n}'),
        ('{\n  "a": 1,\n  // "old": 0,\n}', '{\n  "a": 1,\n  "b": 2,\n  // "old": 0,\n}'),
        ("{ /* none */ }", '{ /* none */ "b": 2 }'),
        ("{\n  // none\n}", '{\n  // none\n  "b": 2\n}'),
        (
            '{"a": "// not a comment", "c": "/* nor this */",}',
            '{"a": "// not a comment", "c": "/* nor this */", "b": 2,}',
        ),
    ],
)
def test_a_new_member_goes_after_the_comments_of_the_last_line(text: str, expected: str) -> None:
    assert set_member(text, ("b",), 2) == expected
    assert remove_member(expected, ("b",)) == text
