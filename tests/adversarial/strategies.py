"""Hypothesis strategies for tool arguments, read from a tool's JSON input schema.

`valid_arguments` covers the schema keywords pydantic emits for the tools: type, anyOf,
enum, $ref/$defs, properties/required, items, string lengths and patterns, numeric bounds,
item counts. `arguments` then usually swaps one argument for something hostile. Shared by
the fuzz tests and bench/loop_stall.py.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

__all__ = ["HOSTILE", "arguments", "valid_arguments"]

_TEXT = st.characters(exclude_categories=["Cs"])  # a lone surrogate is not encodable text
_LONGEST = 200  # drawn strings stay short; huge ones come from the hostile values


def _string(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    low, high = schema.get("minLength", 0), schema.get("maxLength", _LONGEST)
    if "pattern" in schema:
        return st.from_regex(schema["pattern"], fullmatch=True).filter(lambda s: low <= len(s) <= high)
    return st.text(_TEXT, min_size=low, max_size=max(low, min(high, _LONGEST)))


def _integer(schema: dict[str, Any]) -> st.SearchStrategy[int]:
    low = schema.get("minimum", schema.get("exclusiveMinimum", -(2**63)) + ("exclusiveMinimum" in schema))
    high = schema.get("maximum", schema.get("exclusiveMaximum", 2**63) - ("exclusiveMaximum" in schema))
    return st.integers(low, high)


def _object(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    return st.fixed_dictionaries(
        {name: _value(sub, defs) for name, sub in properties.items() if name in required},
        optional={name: _value(sub, defs) for name, sub in properties.items() if name not in required},
    )


def _value(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "$ref" in schema:
        return _value(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:
        return st.one_of([_value(option, defs) for option in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        return _integer(schema)
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = _value(schema.get("items", {}), defs)
        return st.lists(items, min_size=schema.get("minItems", 0), max_size=min(schema.get("maxItems", 5), 5))
    if kind == "object":
        return _object(schema, defs)
    return st.text(_TEXT, max_size=20)


def valid_arguments(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments that satisfy a tool's input schema."""
    return _object(schema, schema.get("$defs", {}))


_NAMED = [
    "",
    "\x00",
    "docs/\x00notes.md",
    ".",
    "..",
    "../../../etc/passwd",
    "/etc/passwd",
    "docs/../../outside.md",
    "~/.ssh/id_rsa",
    "*a*a*a*a*a*a*a*a*a*a*b",
    "**/**/**/**/**/**/*.md",
    "[!a-z]{1,3}?*",
    '"unterminated phrase',
    "NEAR(alpha beta, 2) OR title:x AND NOT y*",
    "^ * - : ( ) \" ' ; -- DROP TABLE entries",
    "a" * 100_000,
    "\U0001d54f" * 2_000,
    "\u202eevil\r\n\t\x0b\x1b[31m",
    "{{7*7}} ${HOME} %s%n",
]
HOSTILE_TEXT = st.sampled_from(_NAMED) | st.text(
    st.characters(exclude_categories=["Cs"]), max_size=40
)  # lone surrogates are the raw-wire test's business: a client cannot even encode them
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
)
HOSTILE = st.one_of(
    HOSTILE_TEXT,
    _SCALARS,
    st.lists(HOSTILE_TEXT | _SCALARS, max_size=1_200),
    st.dictionaries(HOSTILE_TEXT, HOSTILE_TEXT | _SCALARS, max_size=5),
    st.integers(1, 240).map(lambda depth: json.loads("[" * depth + "]" * depth)),  # the client encodes ~250
)


def arguments(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Valid arguments from the schema, usually with one of them (or an unknown one) hostile."""
    valid = valid_arguments(schema)
    names = [*sorted(schema.get("properties", {})), "unexpected"]

    def spoil(args: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        return st.tuples(st.sampled_from(names), HOSTILE).map(lambda kv: {**args, kv[0]: kv[1]})

    return st.one_of(valid, valid.flatmap(spoil), valid.flatmap(spoil), valid.flatmap(spoil))
