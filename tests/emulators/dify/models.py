"""The emulator's in-memory records: accounts, API keys, datasets, documents, segments, fields."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .process_rule import ProcessRule

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Account",
    "ApiKey",
    "Clock",
    "ConsoleSession",
    "Dataset",
    "Document",
    "IndexingJob",
    "MetadataField",
    "Segment",
    "new_id",
]


def new_id() -> str:
    return str(uuid.uuid4())


class Clock:
    """Wall time plus a test-controlled offset; strictly increasing, so two reads never tie."""

    def __init__(self) -> None:
        self.offset = 0.0
        self._last = 0.0

    def now(self) -> float:
        value = max(time.time() + self.offset, self._last + 1e-6)
        self._last = value
        return value

    def advance(self, seconds: float) -> None:
        self.offset += seconds


@dataclass
class Account:
    id: str
    name: str
    email: str
    password: str | None = None


@dataclass
class ApiKey:
    id: str
    token: str
    type: str  # "dataset" or "app"
    created_at: float
    last_used_at: float | None = None


@dataclass
class MetadataField:
    id: str
    name: str
    type: str  # string | number | time


@dataclass
class Segment:
    id: str
    position: int
    content: str
    word_count: int  # characters
    tokens: int
    keywords: list[str]
    index_node_id: str = field(default_factory=new_id)
    vector: npt.NDArray[np.float32] | None = None  # the embedder's vector, computed on first search


@dataclass
class IndexingJob:
    """One (re)indexing run, timed from `started_at` (None while no worker has picked it up).

    Phases split `duration` in quarters: waiting, parsing, splitting, indexing; then completed.
    A job with a `failure` ends in `error` where splitting would start.
    """

    duration: float
    started_at: float | None
    failure: str | None = None
    paused_at: float | None = None
    paused_for: float = 0.0


@dataclass
class Document:
    id: str
    dataset_id: str
    position: int
    name: str
    text: str
    batch: str
    created_at: float
    updated_at: float
    created_by: str
    doc_form: str
    doc_language: str
    process_rule: ProcessRule
    job: IndexingJob
    segments: list[Segment]  # what the current job produces
    old_segments: list[Segment] = field(default_factory=list)  # `re_segment` rows until the job starts
    upload_file_id: str = field(default_factory=new_id)
    metadata: dict[str, Any] | None = None
    bindings: list[str] = field(default_factory=list)  # metadata field ids bound to this document
    enabled: bool = True
    disabled_at: float | None = None
    disabled_by: str | None = None
    archived: bool = False
    status_marker_until: float = 0.0  # "being indexed" after enable/disable/archive (spec §4.9)
    index_ready_at: float = 0.0  # when an enable / un_archive reaches the index
    segments_switch_at: float = 0.0  # when the index task after enable/disable switches the segments
    stale_flag_until: float = 0.0  # the "being indexed" flag a fast index task left behind


@dataclass
class Dataset:
    id: str
    name: str
    description: str
    permission: str
    provider: str
    indexing_technique: str | None
    embedding_model: str | None
    embedding_model_provider: str | None
    retrieval_model: dict[str, Any] | None
    created_at: float
    updated_at: float
    created_by: str
    enable_api: bool = True
    built_in_field_enabled: bool = False
    doc_form: str | None = None
    process_rule: ProcessRule | None = None
    partial_member_list: list[str] = field(default_factory=list)
    fields: dict[str, MetadataField] = field(default_factory=dict)
    documents: dict[str, Document] = field(default_factory=dict)
    next_position: int = 1


@dataclass
class ConsoleSession:
    """A logged-in console session: the tokens login hands out (cookies from 1.9, body before)."""

    access_token: str
    refresh_token: str
    csrf_token: str
