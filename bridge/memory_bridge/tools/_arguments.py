"""Tool arguments as the caller wrote them: a string for a parameter that takes text stays text.

The SDK parses a string argument as JSON whenever its parameter is not annotated plain
`str` (some clients send lists as JSON text), so `"null"` given for an optional string
became None and `'["a"]'` a list: `memory_search(query="null")` listed
every entry, and evidence that looked like JSON was refused. Here that parsing applies only
to parameters that cannot take the string as it is (`text_keys`).

Arguments that do not fit the schema are answered as the tool's error result, the
`{"error": ...}` object its store errors get, with one sentence per field
(`invalid_result`) instead of the SDK's raw pydantic text. `_register.add_tools` hands both
to the SDK through `memory_bridge._sdk.handle_arguments`.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from mcp.types import CallToolResult
from pydantic import BaseModel, ValidationError

from ._error_result import error_result
from ._invalid import describe_invalid

__all__ = ["invalid_result", "text_keys"]


def _takes_text(annotation: Any) -> bool:
    """Whether a string can be a value of `annotation` (str, a str enum or Literal, or a union
    or Annotated type holding one)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _takes_text(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return any(_takes_text(member) for member in get_args(annotation))
    if origin is Literal:
        return any(isinstance(value, str) for value in get_args(annotation))
    return isinstance(annotation, type) and issubclass(annotation, str)


def text_keys(arg_model: type[BaseModel]) -> frozenset[str]:
    """The argument names (and aliases) of `arg_model` whose parameter can take a string as it is."""
    keys: set[str] = set()
    for name, field in arg_model.model_fields.items():
        if _takes_text(field.annotation):
            keys.update((name, field.alias) if field.alias else (name,))
    return frozenset(keys)


def invalid_result(error: ValidationError, arg_model: type[BaseModel]) -> CallToolResult:
    """The error result for arguments that do not fit `arg_model`: one sentence per field."""
    return error_result(describe_invalid(error, arg_model))
