"""Argument types of the entry tools: the schema clients see and the validation they get."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

__all__ = [
    "Body",
    "Cursor",
    "EntryId",
    "EntryType",
    "ExistingId",
    "OperationId",
    "ProjectName",
    "Query",
    "Sort",
    "Source",
    "Tag",
    "Tags",
    "Title",
]

EntryId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$",
        description="Entry id: letters, digits and . _ : / @ + -, starting with a letter or digit.",
    ),
]
ExistingId = Annotated[str, Field(min_length=1, max_length=1024, description="Id of an existing entry.")]
Title = Annotated[str, Field(min_length=1, max_length=512, description="Short title; must not be empty.")]
Body = Annotated[str, Field(max_length=262_144, description="The entry text (up to 256 KiB).")]
EntryType = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z][A-Za-z0-9_-]*$",
        description="Entry type: pattern, decision, reference, feedback, incident, project, entity, state...",
    ),
]
Tag = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=r"^[^,\s](?:[^,]*[^,\s])?$",
        description="A tag: non-empty, no commas, no surrounding spaces; case-sensitive.",
    ),
]
Tags = Annotated[list[Tag], Field(max_length=32, description="Tags (AND-matched by search).")]
Source = Annotated[str, Field(min_length=1, max_length=256, description="Who or what wrote the entry.")]
ProjectName = Annotated[
    str, Field(max_length=256, description='Project the entry belongs to; "" means cross-project.')
]
OperationId = Annotated[
    str,
    Field(min_length=1, max_length=200, description="Idempotency key: a retry with it replays the outcome."),
]
Query = Annotated[
    str, Field(max_length=1024, description="Words to rank by; matches title, body, tags and id.")
]
Cursor = Annotated[str, Field(min_length=1, max_length=512, description="next_cursor of the previous page.")]
Sort = Literal["hits", "updated"]
