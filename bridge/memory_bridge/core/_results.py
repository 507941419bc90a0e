"""The tool operations' result models: each tool's output schema, and the seeds' result objects.

A model serialises exactly the keys it was built with, in declaration order: a key a
result leaves out stays out (not `null`), and a key given as `None` is `null`. So the
text a tool answers (the SDK's JSON of the model) is the seed's object byte for byte,
and `structuredContent` is the same object, valid against the tool's `outputSchema`.
Fields that only some shapes of a result carry are optional, declared where the seed
puts them.
"""

from __future__ import annotations

import functools
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from ..stores._base import Entry
from ..stores._knowledge import DocMetadata

__all__ = [
    "AbsorbResult",
    "AuditResult",
    "ConsolidateResult",
    "CreateDatasetResult",
    "CronHealthResult",
    "DeleteResult",
    "DocumentHistoryResult",
    "DocumentRollbackResult",
    "DocumentStatusResult",
    "EntryPageResult",
    "GetResult",
    "HistoryResult",
    "LessonResult",
    "ListDatasetsResult",
    "MemoryConfig",
    "PruneResult",
    "RecallResult",
    "RollbackResult",
    "SaveResult",
    "ScanResult",
    "SearchMemoryResult",
    "SearchResult",
    "SetResult",
    "SlotRef",
    "ToolResult",
    "WriteResult",
]


class ToolResult(BaseModel):
    """A result object: the keys it was given, in declaration order, nothing else."""

    model_config = ConfigDict(serialize_by_alias=True, validate_by_alias=True, validate_by_name=True)

    @model_serializer(mode="wrap")
    def _given_keys_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        keys = _wire_keys(type(self))
        given = self.model_fields_set
        if given.issuperset(keys):  # every field given: the usual case, nothing to leave out
            return data
        wanted = {keys.get(name, name) for name in given}
        return {key: value for key, value in data.items() if key in wanted}


@functools.cache
def _wire_keys(model: type[ToolResult]) -> dict[str, str]:
    """field name -> its key in the result (alias or name), once per model: pydantic's
    `model_fields` is a computed property, too slow to read for every entry of a page."""
    return {name: field.alias or name for name, field in model.model_fields.items()}


# Entries (memory-mcp)


class EntryModel(ToolResult):
    """A memory entry, as memory-mcp returns it."""

    id: str
    title: str
    body: str
    type: str
    tags: list[str]
    source: str
    project: str
    created: str
    updated: str
    hits: int
    ttl: str = Field(description='Seconds until expiry, as a string; "" when the entry does not expire.')

    @classmethod
    def of(cls, entry: Entry, **more: Any) -> Self:
        """An entry as a result carries it, with a subclass's `more` fields."""
        return cls(
            id=entry.id,
            title=entry.title,
            body=entry.body,
            type=entry.type,
            tags=list(entry.tags),
            source=entry.source,
            project=entry.project,
            created=entry.created,
            updated=entry.updated,
            hits=entry.hits,
            ttl=entry.ttl,
            **more,
        )


class GetResult(EntryModel):
    revision: int


class EntryPageResult(ToolResult):
    count: int
    results: list[EntryModel]
    total: int = Field(description="Matches on every page.")
    next_cursor: str | None = Field(description="Pass back as cursor for the next page; null on the last.")


class SearchResult(EntryPageResult):
    match: Literal["all", "any", "semantic", "none"] | None = Field(
        default=None, description="How the query matched (present when a query was given)."
    )
    degraded: str | None = Field(default=None, description="Why ranking fell back to keywords, if it did.")


class SetResult(ToolResult):
    """A write's outcome; on a refusal `ok` is false and `error` says why."""

    ok: bool
    error: Literal["conflict", "operation_id_mismatch"] | None = None
    id: str
    operation: str | None = None
    revision: int | None = None
    replayed: bool | None = Field(
        default=None, description="True when an operation_id replayed an earlier write."
    )
    warning: str | None = None
    current_revision: int | None = Field(default=None, description="On a conflict: the entry's revision now.")
    expected_version: int | None = Field(default=None, description="On a conflict: the if_version given.")
    recorded_id: str | None = Field(
        default=None, description="On operation_id_mismatch: the id it was used for."
    )


class DeleteResult(ToolResult):
    ok: bool
    id: str
    operation: str
    revision: int


class HistoryVersion(ToolResult):
    """One snapshot, as the store recorded it (`raw` when it could not be read)."""

    model_config = ConfigDict(extra="allow")
    index: int


class HistoryResult(ToolResult):
    id: str
    count: int
    versions: list[HistoryVersion]


class RollbackResult(ToolResult):
    ok: bool
    id: str
    operation: str
    restored_from: str
    revision: int


class PruneResult(ToolResult):
    count: int
    threshold_days: int
    cutoff_date: str
    candidates: list[EntryModel]
    total: int
    next_cursor: str | None


# Knowledge (Local Dify MCP Memory)


class Metadata(ToolResult):
    atom_type: str
    tags: list[str]
    project_module: str
    language: str
    task_type: str
    error_pattern: str
    scope: str

    @classmethod
    def of(cls, metadata: DocMetadata) -> Metadata:
        """A document's metadata as a result carries it."""
        return cls(
            atom_type=metadata.atom_type,
            tags=list(metadata.tags),
            project_module=metadata.project_module,
            language=metadata.language,
            task_type=metadata.task_type,
            error_pattern=metadata.error_pattern,
            scope=metadata.scope,
        )


class Record(ToolResult):
    """One passage found, fenced as untrusted data in `content`."""

    kind: Literal["lesson", "knowledge"] | None = Field(default=None, description="recall_lessons only.")
    rungIndex: int | None = Field(
        default=None, description="recall_lessons: the ladder rung that found a lesson."
    )
    datasetId: str
    slot: str
    score: float
    segmentId: str
    documentId: str
    documentName: str
    position: int
    status: str
    enabled: bool
    keywords: list[str]
    wordCount: int
    metadata: Metadata
    content: str
    bestEffort: bool | None = Field(
        default=None,
        description="True: scored under the threshold, returned only because bestEffort was asked.",
    )


_BEST_EFFORT = "True when bestEffort was asked: records under scoreThreshold are included, marked."
_HINT = "When nothing scored at least scoreThreshold: that nothing matched, and what to try."


class SearchMemoryResult(ToolResult):
    query: str
    datasetsSearched: list[str]
    filters: dict[str, Any] | None
    injectedFilters: dict[str, str] | None
    scoreThreshold: float | None
    errors: list[dict[str, Any]]
    totalRecords: int
    records: list[Record]
    bestEffort: bool | None = Field(default=None, description=_BEST_EFFORT)
    hint: str | None = Field(default=None, description=_HINT)
    degraded: str | None = Field(default=None, description="Why dense retrieval was unavailable, if it was.")


class LadderRung(ToolResult):
    filters: dict[str, str]
    added: int


class RecallResult(ToolResult):
    query: str
    lessonDataset: str
    ladderUsed: list[LadderRung]
    injectedFilters: dict[str, str]
    scoreThreshold: float
    lessonHits: int
    supplementaryHits: int
    totalRecords: int
    errors: list[dict[str, Any]]
    records: list[Record]
    bestEffort: bool | None = Field(default=None, description=_BEST_EFFORT)
    hint: str | None = Field(default=None, description=_HINT)


class SaveResult(ToolResult):
    """A document written (created, or updated in place)."""

    ok: bool
    documentOk: bool
    metadataOk: bool
    name: str
    slot: str
    datasetId: str
    documentId: str
    created: bool | None = Field(description="False: updated in place; null: not known yet (queued).")
    changed: bool
    indexingStatus: str


class LessonResult(SaveResult):
    datasetSlot: str


class Supersession(ToolResult):
    documentId: str
    action: Literal["disable", "delete"]
    result: str


class WriteResult(SaveResult):
    supersedes: Supersession | None = Field(default=None, description="The document retired, if any.")


class DatasetInfo(ToolResult):
    id: str
    name: str
    description: str
    documentCount: int
    indexingTechnique: str


class SlotRef(ToolResult):
    name: str
    configuredId: str


class ListDatasetsResult(ToolResult):
    datasets: list[DatasetInfo]
    declaredLocally: list[SlotRef]


class DatasetRef(ToolResult):
    id: str
    name: str
    description: str


class MetadataField(ToolResult):
    name: str
    ok: bool


class MetadataSchema(ToolResult):
    installed: list[MetadataField]
    failed: list[MetadataField]
    complete: bool


class CreateDatasetResult(ToolResult):
    ok: bool
    created: bool
    dataset: DatasetRef
    metadataSchema: MetadataSchema


class DocumentStatusResult(ToolResult):
    ok: bool
    datasetId: str
    slot: str
    documentId: str
    result: Literal["deleted", "disabled", "enabled"]
    queued: bool = Field(
        default=False, description="True: Dify could not take the change yet; it waits and is applied later."
    )
    reason: str | None = Field(default=None, description="Why a queued change waits.")


class DocumentVersionModel(ToolResult):
    """One version of a document: its whole state after a change."""

    version: int = Field(description="1 for the first version, one more per change.")
    documentId: str
    change: Literal["created", "updated", "enabled", "disabled", "marked", "deleted", "restored", "found"] = (
        Field(
            description="`found`: a state the store held that no recorded change explains (written before "
            "versions were kept, or outside memctl)."
        )
    )
    deleted: bool = Field(description="A tombstone: the document was deleted; its last state is kept.")
    at: str = Field(description="When, ISO 8601 in UTC.")
    cause: str = Field(description="The tool or command that made the change.")
    operation_id: str
    restored_from: int | None = Field(description="A roll-back: the version it brought back.")
    enabled: bool
    metadata: Metadata
    marks: dict[str, str]
    text: str = Field(description="The document's text at this version, fenced as untrusted data.")


class DocumentHistoryResult(ToolResult):
    slot: str
    name: str
    latest_version: int
    deleted: bool = Field(description="True when the newest version is a deletion.")
    count: int
    versions: list[DocumentVersionModel]
    next_before: int | None = Field(description="Pass as `before` for older versions; null at the first.")


class DocumentRollbackResult(ToolResult):
    ok: bool
    slot: str
    name: str
    documentId: str
    version: int = Field(description="The new version the roll-back wrote.")
    restored_from: int
    undeleted: bool = Field(description="True when the document had been deleted and is back.")


class Finding(ToolResult):
    class_: str = Field(alias="class")
    slot: str
    documentId: str
    name: str
    reason: str
    suggested_action: Literal["disable", "delete"]


class AuditSummary(ToolResult):
    totalFindings: int
    byClass: dict[str, int]
    bySlot: dict[str, int]
    staleLoreDaysUsed: int


class AuditResult(ToolResult):
    ok: bool
    findings: list[Finding]
    summary: AuditSummary
    errors: list[dict[str, Any]]


class DocRef(ToolResult):
    documentId: str
    name: str


class DuplicatePair(ToolResult):
    lessonKey: str
    keeper: DocRef
    loser: DocRef


class StaleCandidate(ToolResult):
    documentId: str
    name: str
    atomType: str
    recallCount: int


class ConsolidateCandidates(ToolResult):
    lessonKeyDuplicates: list[DuplicatePair]
    stale: list[StaleCandidate]
    compressArchived: list[DocRef]


class SlotProjection(ToolResult):
    workingSetSize: int
    disabledCount: int
    lessonKeyDuplicateCandidates: int
    staleCandidates: int
    compressArchivedCandidatesApprox: int
    candidates: ConsolidateCandidates


class Refusal(ToolResult):
    code: Literal["policy-invalid", "policy-undeclared-slot"]
    slot: str
    message: str


class ConsolidateResult(ToolResult):
    ok: bool
    readOnly: Literal[True]
    policies: dict[str, str]
    refine: list[str]
    refusals: list[Refusal]
    slotsProjected: list[str]
    perSlot: dict[str, SlotProjection]
    errors: list[dict[str, str]]
    note: str


class ScannedFile(ToolResult):
    relPath: str
    docName: str
    size: int
    mtime: str


class RefusedFile(ToolResult):
    """A file the scan found but absorb_files would refuse as private."""

    relPath: str
    refusal: Literal["memctl-or-git", "secret-file", "gitignored", "gitignore-unknown"]
    reason: str


class ScanResult(ToolResult):
    root: str
    include: list[str]
    ignore: list[str]
    total: int
    files: list[ScannedFile]
    refused: list[RefusedFile]


class AbsorbedFile(ToolResult):
    """One requested file: refused (`error`), previewed (`dryRun`) or saved (`documentId`)."""

    file: str
    ok: bool
    error: str | None = None
    dryRun: bool | None = None
    docName: str | None = None
    size: int | None = None
    documentId: str | None = None
    created: bool | None = None
    refusal: Literal["memctl-or-git", "secret-file", "gitignored", "gitignore-unknown"] | None = None


class AbsorbResult(ToolResult):
    datasetId: str
    datasetSlot: str
    total: int
    succeeded: int
    failed: int
    results: list[AbsorbedFile]


class MemoryConfig(ToolResult):
    project: str
    scope: str
    entryStore: str
    knowledgeStore: str
    datasetSlots: list[SlotRef]
    embeddingModel: str | None
    embeddingFailure: str | None
    maxResults: int
    absorbDefaultDataset: str
    authTokenConfigured: bool


class CronHealthResult(ToolResult):
    """The maintenance job's health (`memory_bridge.maintenance.cron_health`)."""

    ok: bool
    healthy: bool
    summary: str
    stateDir: str
    logPath: str
    lastAttempt: dict[str, Any] | None
    lastSuccessAt: str | None
    lastFailureAt: str | None
    recent: list[dict[str, Any]]
    escalations: list[dict[str, Any]]
    openEscalations: int
