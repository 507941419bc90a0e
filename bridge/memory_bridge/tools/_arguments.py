"""Tool arguments as the caller wrote them: a string for a parameter that takes text stays text.

The SDK parses a string argument as JSON whenever its parameter is not annotated plain
`str` (some clients send lists as JSON text), so `"null"` given for an optional string
became None and `'["a"]'` a list: `memory_search(query="null")` listed
every entry, and evidence that looked like JSON was refused. Here that parsing applies only
to parameters that cannot take the string as it is.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import PrivateAttr

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


class TextKeptArguments(FuncMetadata):
    """The SDK's argument handling, except that a string sent for a text parameter is kept."""

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


def keep_text(metadata: FuncMetadata) -> TextKeptArguments:
    """`metadata` with text arguments kept as sent (same argument model and output schema)."""
    return TextKeptArguments(
        arg_model=metadata.arg_model,
        output_schema=metadata.output_schema,
        output_model=metadata.output_model,
        wrap_output=metadata.wrap_output,
    )
