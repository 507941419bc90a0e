"""The shapes an LLM must answer in, validated with pydantic.

The extractor answers `{"atoms": [...]}` (the seed's contract); the compile judge
answers one of `{"action": "create"|"skip", "reason"}` or `{"action": "update",
"supersedes", "merged_text", "reason"}`. `parse_answer` accepts the JSON bare, in a
code fence, or after some prose, and raises `AnswerInvalid` naming the problem.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memory_bridge.core import ATOM_TYPES as KNOWLEDGE_ATOM_TYPES

from .._errors import AnswerInvalid

__all__ = [
    "ATOM_TYPES",
    "TASK_TYPES",
    "Atom",
    "AtomMetadata",
    "CompileDecision",
    "ExtractorAnswer",
    "MergeDecision",
    "RefreshDecision",
    "parse_answer",
]

# The seven types an extractor may give: every knowledge atom type but plans (plans come
# from plan capture, never from a transcript).
ATOM_TYPES = tuple(kind for kind in KNOWLEDGE_ATOM_TYPES if kind != "plan")
LESSON = "self-improvement-lesson"
TASK_TYPES = ("planning", "implementation", "debugging", "refactor", "review", "deploy", "docs", "unknown")
TITLE_MAX = 80
BODY_MAX = 700
MERGED_MAX = 4000  # a merged or rewritten document's text (compile's update and maintain's passes)
EVIDENCE_MAX = 240


def _line(value: str) -> str:
    return " ".join(value.split()).strip()


class AtomMetadata(BaseModel):
    model_config = ConfigDict(extra="ignore")

    project_module: str = ""
    language: str = ""
    task_type: str = ""
    error_pattern: str = ""

    @field_validator("project_module", "language", "task_type", "error_pattern", mode="before")
    @classmethod
    def _normalise(cls, value: Any) -> str:
        return _line(str(value or "")).lower()

    @field_validator("task_type")
    @classmethod
    def _known_task(cls, value: str) -> str:
        return value if not value or value in TASK_TYPES else "unknown"


class Atom(BaseModel):
    """One durable fact from a session."""

    model_config = ConfigDict(extra="ignore")

    type: str
    title: Annotated[str, Field(min_length=1)]
    body: Annotated[str, Field(min_length=1)]
    tags: Annotated[list[str], Field(min_length=1)]
    metadata: AtomMetadata = Field(default_factory=AtomMetadata)
    evidence: str = ""

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> str:
        return str(value or "").strip().lower()

    @field_validator("title", mode="after")
    @classmethod
    def _title(cls, value: str) -> str:
        return _line(value)[:TITLE_MAX]

    @field_validator("body", mode="after")
    @classmethod
    def _body(cls, value: str) -> str:
        return value.strip()[:BODY_MAX]

    @field_validator("evidence", mode="before")
    @classmethod
    def _evidence(cls, value: Any) -> str:
        return _line(str(value or ""))[:EVIDENCE_MAX]

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any) -> list[str]:
        items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
        tags = [re.sub(r"\s+", "-", str(t).strip().lower()) for t in items]
        return list(dict.fromkeys(t for t in tags if t))

    def problem(self) -> str | None:
        """Why this atom cannot be kept, or None."""
        if self.type == "plan":
            return "plan atoms come only from plan capture"
        if self.type not in ATOM_TYPES:
            return f"unknown atom type {self.type!r}"
        missing = [
            k for k in ("project_module", "task_type", "error_pattern") if not getattr(self.metadata, k)
        ]
        if self.type == LESSON and missing:
            return f"a lesson needs {', '.join(missing)}"
        return None


class ExtractorAnswer(BaseModel):
    """The extractor's answer; atoms are checked one by one, so one bad atom costs only itself."""

    atoms: list[dict[str, Any]]


class _Create(BaseModel):
    action: Literal["create"]
    reason: str = ""


class _Skip(BaseModel):
    action: Literal["skip"]
    reason: str = ""


class _Update(BaseModel):
    action: Literal["update"]
    supersedes: Annotated[str, Field(min_length=1)]
    merged_text: Annotated[str, Field(min_length=1, max_length=MERGED_MAX)]
    reason: str = ""


class CompileDecision(BaseModel):
    decision: Annotated[_Create | _Skip | _Update, Field(discriminator="action")]


class _Merge(BaseModel):
    action: Literal["merge"]
    keeper_id: Annotated[str, Field(min_length=1)]
    loser_id: Annotated[str, Field(min_length=1)]
    merged_text: Annotated[str, Field(min_length=1, max_length=MERGED_MAX)]
    reason: str = ""


class _Keep(BaseModel):
    action: Literal["keep"]
    keeper_id: Annotated[str, Field(min_length=1)]
    loser_id: Annotated[str, Field(min_length=1)]
    reason: str = ""


class MergeDecision(BaseModel):
    """maintain's near-duplicate judge: merge the pair into one text, or keep both."""

    decision: Annotated[_Merge | _Keep, Field(discriminator="action")]


class RefreshDecision(BaseModel):
    """maintain's refresh judge on a stale document: keep, rewrite (with the new text) or archive."""

    model_config = ConfigDict(extra="ignore")

    action: Literal["keep", "rewrite", "archive"]
    document_id: Annotated[str, Field(min_length=1)]
    rewritten_text: Annotated[str, Field(max_length=MERGED_MAX)] = ""
    stale_after: bool = True
    reason: str = ""

    @model_validator(mode="after")
    def _text_for_rewrite(self) -> RefreshDecision:
        if self.action == "rewrite" and not self.rewritten_text.strip():
            raise ValueError("a rewrite needs rewritten_text")
        return self


M = TypeVar("M", bound=BaseModel)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def _json_object(text: str) -> Any:
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    raise AnswerInvalid(f"the answer is not JSON (it starts {_line(text)[:60]!r})")


def parse_answer(text: str, model: type[M], *, wrap: str | None = None) -> M:
    """Validate an answer against `model` (`wrap` nests the object under that key first)."""
    value = _json_object(text)
    if wrap is not None:
        value = {wrap: value}
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"] if p != wrap) or "answer"
        raise AnswerInvalid(f"the answer breaks the schema: {where}: {first['msg']}") from None
