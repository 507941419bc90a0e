"""Tool arguments as the caller wrote them: a string for a parameter that takes text stays text.

The SDK parses a string argument as JSON whenever its parameter is not annotated plain
`str` (some clients send lists as JSON text), so `"null"` given for an optional string
became None and `'["a"]'` a list: `memory_search(query="null")` listed
every entry, and evidence that looked like JSON was refused. Here that parsing applies only
to parameters that cannot take the string as it is.

Arguments that do not fit the schema are answered as the tool's error result, the
`{"error": ...}` object its store errors get, with one sentence per field
(`_invalid.describe_invalid`) instead of the SDK's raw pydantic text.
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import PrivateAttr, ValidationError

from ._error_result import error_result
from ._invalid import describe_invalid

__all__ = ["TextKeptArguments", "keep_text"]


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


_INVALID = "\x00invalid"
"""The key under which `validate_arguments` hands `call_fn` what was wrong (no argument
name can hold a NUL)."""


class TextKeptArguments(FuncMetadata):
    """The SDK's argument handling, except that a string sent for a text parameter is kept,
    and arguments that fail validation are answered as an error result naming each field."""

    _text_keys: frozenset[str] = PrivateAttr(default=frozenset())

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        keys: set[str] = set()
        for name, field in self.arg_model.model_fields.items():
            if _takes_text(field.annotation):
                keys.update((name, field.alias) if field.alias else (name,))
        self._text_keys = frozenset(keys)

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = super().pre_parse_json(data)
        for key, value in data.items():
            if isinstance(value, str) and key in self._text_keys:
                parsed[key] = value
        return parsed

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        try:
            return super().validate_arguments(arguments_to_validate)
        except ValidationError as exc:
            return {_INVALID: describe_invalid(exc, self.arg_model)}

    async def call_fn(
        self,
        fn: Callable[..., Any | Awaitable[Any]],
        fn_is_async: bool,
        arguments: dict[str, Any],
        arguments_to_pass_directly: dict[str, Any] | None = None,
    ) -> Any:
        if _INVALID in arguments:
            return error_result(arguments[_INVALID])
        return await super().call_fn(fn, fn_is_async, arguments, arguments_to_pass_directly)


def keep_text(metadata: FuncMetadata) -> TextKeptArguments:
    """`metadata` with text arguments kept as sent (same argument model and output schema)."""
    return TextKeptArguments(
        arg_model=metadata.arg_model,
        output_schema=metadata.output_schema,
        output_model=metadata.output_model,
        wrap_output=metadata.wrap_output,
    )
