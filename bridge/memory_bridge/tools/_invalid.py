"""Arguments that do not fit a tool's input schema, said as one sentence per field.

Pydantic's own text ("1 validation error for memory_setArguments / tags / Input should
be a valid list [type=list_type, ...] / For further information visit ...") is written
for the programmer; the model calling a tool needs the field and the problem:
"tags: must be a list of strings." Only the first problem of each field is told.
"""

from __future__ import annotations

import json
import re
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

__all__ = ["describe_invalid"]

_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SHOULD = re.compile(r"^(?:Input|String|List|Value|Dictionary|Tuple|Set|Object|Decimal)? ?should (?:be )?")


def _kind(annotation: Any) -> str | None:
    """What a value of `annotation` is, in words ("a list of strings"); None if unsure."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _kind(args[0])
    if origin is Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)]
        kinds = [_kind(m) for m in members]
        if not kinds or any(k is None for k in kinds):
            return None
        return " or ".join(k for k in kinds if k) + (" or null" if len(members) < len(args) else "")
    if origin is Literal:
        return "one of " + ", ".join(json.dumps(v) for v in args)
    if origin in (list, tuple, set, frozenset):
        item = args[0] if args else None
        if get_origin(item) is Annotated:
            item = get_args(item)[0]
        return f"a list of {_SIMPLE[item]}s" if item in _SIMPLE else "a list"
    if origin is dict or (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return "an object"
    if annotation in _SIMPLE:
        name = _SIMPLE[annotation]
        return f"an {name}" if name[0] in "aeiou" else f"a {name}"
    return None


def _where(loc: tuple[int | str, ...]) -> str:
    return str(loc[0]) + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc[1:])


def _sentence(error: ErrorDetails, model: type[BaseModel]) -> str:
    loc, kind_of_error = error["loc"], error["type"]
    if kind_of_error == "missing":
        return f"{_where(loc)}: is required."
    if kind_of_error == "extra_forbidden":
        return f"{_where(loc)}: is not an argument of this tool."
    field = model.model_fields.get(str(loc[0]))
    whole = all(isinstance(part, int) for part in loc[1:])  # the field, or an item of its list
    if whole and field is not None and kind_of_error.endswith(("_type", "_parsing", "literal_error")):
        kind = _kind(field.annotation)
        if kind is not None:
            return f"{loc[0]}: must be {kind}."
    message = str(error["msg"]).removeprefix("Value error, ").replace(" after validation", "")
    if _SHOULD.match(message):
        should = _SHOULD.sub("", message)
        verb = "must " if message.split(" should ", 1)[1].startswith(("have", "match")) else "must be "
        message = verb + should
    if kind_of_error == "string_pattern_mismatch" and len(loc) == 1 and field and field.description:
        message += f" ({field.description.rstrip('.')})"  # what the pattern means, in words
    return f"{_where(loc)}: {message.rstrip('.')}."


def describe_invalid(exc: ValidationError, model: type[BaseModel]) -> str:
    """One sentence per field of `model` that `exc` found wrong, naming it and its problem."""
    first: dict[object, ErrorDetails] = {}
    for error in exc.errors():
        first.setdefault(error["loc"][0] if error["loc"] else "", error)
    return " ".join(_sentence(error, model) for error in first.values())
