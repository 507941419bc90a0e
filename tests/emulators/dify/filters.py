"""Metadata filtering for retrieve (spec §7): the 18 operators, evaluated on documents' metadata dicts.

`text(v)` renders a value as PostgreSQL's `->>` would (strings as-is, numbers as JSON text, JSON
null as SQL NULL); `num(v)` casts that text to float, and a non-numeric value fails the whole query
with a 500 as the database cast does. A missing key is SQL NULL: it never satisfies a comparison
(`not contains` and `is not` included); `empty` means the key is absent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .errors import DifyError, validation_error
from .models import Document
from .quirks import Quirks

__all__ = ["OPERATORS", "MetadataFilter", "parse_filter"]

OPERATORS = (
    "contains",
    "not contains",
    "start with",
    "end with",
    "is",
    "is not",
    "empty",
    "not empty",
    "in",
    "not in",
    "=",
    "≠",
    ">",
    "<",
    "≥",
    "≤",
    "before",
    "after",
)
_LIST_OPERATORS = ("in", "not in")
_PRESENCE_OPERATORS = ("empty", "not empty")
_MODEL = "MetadataFilteringCondition"


@dataclass(frozen=True)
class Condition:
    name: str
    operator: str
    value: Any


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _num(value: Any) -> float | None:
    text = _text(value)
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise DifyError(
            500, "internal_server_error", f'invalid input syntax for type double precision: "{text}"'
        ) from None


def _operand(value: Any) -> float:
    """The right-hand side of a numeric comparison (numeric strings are accepted)."""
    result = _num(value)
    assert result is not None
    return result


def _list_values(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        return [v if isinstance(v, str) else json.dumps(v) for v in value if v is not None]
    return [_text(value) or ""]


def _matches(condition: Condition, metadata: dict[str, Any] | None) -> bool:
    """One condition against one document's dict (SQL NULL semantics for missing keys)."""
    op, value, values = condition.operator, condition.value, metadata or {}
    present = condition.name in values
    if op == "empty":
        return not present
    if op == "not empty":
        return present
    raw = values.get(condition.name)
    if op in _LIST_OPERATORS:
        wanted = _list_values(value)
        if not wanted:
            return op == "not in"
        text = _text(raw)
        return text is not None and (text in wanted) == (op == "in")
    if op in ("contains", "not contains", "start with", "end with") or (
        op in ("is", "is not", "=", "≠") and isinstance(value, str)
    ):
        text, needle = _text(raw), str(value)
        if text is None:
            return False
        return {
            "contains": needle in text,
            "not contains": needle not in text,
            "start with": text.startswith(needle),
            "end with": text.endswith(needle),
            "is": text == needle,
            "=": text == needle,
            "is not": text != needle,
            "≠": text != needle,
        }[op]
    number, operand = _num(raw), _operand(value)
    if number is None:
        return False
    return {
        "is": number == operand,
        "=": number == operand,
        "is not": number != operand,
        "≠": number != operand,
        ">": number > operand,
        "after": number > operand,
        "<": number < operand,
        "before": number < operand,
        "≥": number >= operand,
        "≤": number <= operand,
    }[op]


@dataclass(frozen=True)
class MetadataFilter:
    """Parsed `metadata_filtering_conditions` with only the conditions that take effect."""

    logical_operator: str
    conditions: tuple[Condition, ...]

    def matching(self, documents: Iterable[Document]) -> set[str]:
        """Ids of the documents that satisfy the filter (every condition is evaluated on every
        document, so a failing cast surfaces as it does in SQL)."""
        combine = all if self.logical_operator == "and" else any
        return {
            doc.id
            for doc in documents
            if combine([_matches(condition, doc.metadata) for condition in self.conditions])
        }


def _condition(raw: Any, index: int, quirks: Quirks) -> Condition | None:
    where = f"conditions.{index}"
    if not isinstance(raw, dict):
        raise validation_error(_MODEL, where, "Input should be a valid dictionary")
    name, op, value = raw.get("name"), raw.get("comparison_operator"), raw.get("value")
    if not isinstance(name, str):
        raise validation_error(_MODEL, f"{where}.name", "Field required")
    allowed = OPERATORS if quirks.list_operators else tuple(o for o in OPERATORS if o not in _LIST_OPERATORS)
    if op not in allowed:
        if not quirks.list_operators:
            return None  # before 1.7 unknown operators were dropped silently
        choices = ", ".join(f"'{o}'" for o in OPERATORS[:-1]) + f" or '{OPERATORS[-1]}'"
        raise validation_error(
            _MODEL, f"{where}.comparison_operator", f"Input should be {choices} [type=literal_error]"
        )
    if value is None and op not in _PRESENCE_OPERATORS:
        return None
    return Condition(name, op, value)


def parse_filter(raw: Any, quirks: Quirks) -> MetadataFilter | None:
    """The filter to apply, or None when nothing filters (absent, all conditions ignored, or a
    version that drops the field)."""
    if quirks.metadata_filtering == "ignored" or not raw:
        return None
    if not isinstance(raw, dict):
        raise validation_error(_MODEL, "metadata_filtering_conditions", "Input should be a valid dictionary")
    items = raw.get("conditions") or []
    if not isinstance(items, list):
        raise validation_error(_MODEL, "conditions", "Input should be a valid list")
    conditions = [c for i, item in enumerate(items) if (c := _condition(item, i, quirks)) is not None]
    if not conditions:
        return None
    return MetadataFilter(str(raw.get("logical_operator") or "and"), tuple(conditions))
