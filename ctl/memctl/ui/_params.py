"""Every parameter the web view reads, and the one check each gets before any handler runs.

`ROUTES` names each route's query, path and form parameters. A query string, form body or
URL path must be UTF-8 (a percent-escape of other bytes is refused, not replaced); a text
parameter must be short enough and hold no NUL byte; a number is a whole number of ASCII
digits, 0 to `MAX_NUMBER`. A parameter a route does not name is ignored. Every refusal is
an `InvalidInput` naming the parameter, which the app answers as a 400 page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl, unquote_to_bytes

from memory_bridge import InvalidInput

__all__ = ["MAX_NUMBER", "ROUTES", "Param", "Values", "fields", "path_text", "validated"]

MAX_NUMBER = 1_000_000_000  # an offset or a revision past any store's size
_MAX_FIELDS = 50  # query or form fields at most
_DIGITS = re.compile(r"[0-9]{1,10}", re.ASCII)


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter: where it is sent, its longest text, and whether it is a number."""

    name: str
    where: Literal["query", "path", "form"] = "query"
    max_length: int = 200
    number: bool = False


_DONE = Param("done", max_length=1000)  # the note a correction's redirect shows
_OFFSET = Param("offset", number=True)
_CSRF = Param("csrf", "form", max_length=200)
_FORM_ID = Param("id", "form", max_length=1024)
_DIGEST = Param("base_digest", "form", max_length=200)

ROUTES: dict[str, tuple[Param, ...]] = {
    "/": (_DONE,),
    "/entries": (_OFFSET, _DONE),
    "/search": (
        Param("q", max_length=1000),
        Param("type", max_length=120),
        Param("slot", max_length=120),
        Param("tag", max_length=200),
        Param("best_effort", max_length=1),
        _DONE,
    ),
    "/knowledge": (Param("slot", max_length=120), _OFFSET, _DONE),
    "/entry/{id:path}": (Param("id", "path", max_length=1024), _DONE),
    "/document/{id:path}": (Param("id", "path", max_length=1024), _DONE),
    "/lessons": (Param("pattern", max_length=200), Param("sort", max_length=20), _DONE),
    "/capture": (_DONE,),
    "/status": (_DONE,),
    "/login": (Param("code", max_length=200), Param("token", "form", max_length=1000)),
    "/logout": (_CSRF,),
    "/rollback": (
        _CSRF,
        _FORM_ID,
        Param("revision", "form", number=True),
        _DIGEST,
        Param("base_revision", "form", number=True),
    ),
    "/document-disable": (_CSRF, _FORM_ID),
    "/document-enable": (_CSRF, _FORM_ID, _DIGEST),
    "/document-delete": (_CSRF, _FORM_ID, Param("confirm", "form", max_length=20)),
    "/deleted": (Param("slot", max_length=120), _DONE),
    "/document-rollback": (
        _CSRF,
        Param("slot", "form", max_length=120),
        Param("name", "form", max_length=1024),
        Param("version", "form", number=True),
        Param("expected_version", "form", number=True),
    ),
    "/entry-restore": (
        _CSRF,
        _FORM_ID,
        Param("version", "form", number=True),
        Param("expected_version", "form", number=True),
    ),
}


@dataclass(frozen=True, slots=True)
class Values:
    """A route's checked parameters: every text as sent ("" when absent), numbers parsed."""

    texts: Mapping[str, str]
    numbers: Mapping[str, int]


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a byte that was no UTF-8, kept as a lone surrogate
        return False
    return True


def fields(encoded: bytes, what: Literal["query", "form"]) -> dict[str, str]:
    """A query string's or form body's fields (the last of a repeated name wins); a name or
    value that is not UTF-8 is refused, naming its field."""
    try:
        pairs = parse_qsl(
            encoded.decode("utf-8", "surrogateescape"),
            keep_blank_values=True,
            errors="surrogateescape",
            max_num_fields=_MAX_FIELDS,
        )
    except ValueError:
        raise InvalidInput(what, f"has more than {_MAX_FIELDS} fields") from None
    for name, value in pairs:
        if not (_utf8(name) and _utf8(value)):
            shown = name if _utf8(name) else what
            raise InvalidInput(shown, "is not valid UTF-8 (a percent-escape of other bytes)")
    return dict(pairs)


def path_text(raw_path: bytes, route: str) -> None:
    """Refuse a URL path whose percent-escapes are not UTF-8, naming the route's path parameter."""
    try:
        unquote_to_bytes(raw_path).decode("utf-8")
    except UnicodeDecodeError:
        name = next((p.name for p in ROUTES.get(route, ()) if p.where == "path"), "path")
        raise InvalidInput(name, "is not valid UTF-8 (a percent-escape of other bytes)") from None


def _checked(param: Param, text: str) -> int | None:
    if "\0" in text:
        raise InvalidInput(param.name, "must not contain a NUL byte")
    if len(text) > param.max_length:
        raise InvalidInput(param.name, f"is {len(text)} characters long, over the {param.max_length} limit")
    if not param.number or text == "":
        return None
    if _DIGITS.fullmatch(text) is None or int(text) > MAX_NUMBER:
        raise InvalidInput(param.name, f"must be a whole number from 0 to {MAX_NUMBER}")
    return int(text)


def validated(
    route: str, query: Mapping[str, str], path: Mapping[str, str], form: Mapping[str, str]
) -> Values:
    """The route's parameters, each checked; InvalidInput names the first one that is wrong."""
    sent = {"query": query, "path": path, "form": form}
    texts: dict[str, str] = {}
    numbers: dict[str, int] = {}
    for param in ROUTES[route]:
        text = str(sent[param.where].get(param.name, ""))
        number = _checked(param, text)
        texts[param.name] = text
        if number is not None:
            numbers[param.name] = number
    return Values(texts, numbers)
