"""Hypothesis strategies for valid tool arguments, read from a tool's JSON input schema.

Covers the schema keywords pydantic emits for the tools: type, anyOf, enum, $ref/$defs,
properties/required, items, string lengths and patterns, numeric bounds, item counts.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

__all__ = ["valid_arguments"]

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
