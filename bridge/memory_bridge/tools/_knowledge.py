"""The knowledge tools, with Local Dify MCP Memory's names and argument shapes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from .. import maintenance
from ..core import _absorb, _audit, _document_history
from ..core import _knowledge as kn
from ..core._fence import fence
from ..core._freshness import Freshness
from ..core._knowledge import AtomType
from ..core._results import (
    AbsorbResult,
    AuditResult,
    ConsolidateResult,
    CreateDatasetResult,
    CronHealthResult,
    DocumentHistoryResult,
    DocumentRollbackResult,
    DocumentStatusResult,
    LessonResult,
    ListDatasetsResult,
    MemoryConfig,
    RecallResult,
    SaveResult,
    ScanResult,
    SearchMemoryResult,
    SlotRef,
    WriteResult,
)
from ._register import DESTRUCTIVE, READ_ONLY, WRITE, ToolSet
from ._state import ToolContext, state_of

__all__ = ["KNOWLEDGE_TOOLS", "knowledge_tools"]

knowledge_tools = ToolSet()
tool = knowledge_tools.tool


Slug = Annotated[str, Field(min_length=1, max_length=120, pattern=r"^[a-z0-9][a-z0-9_-]*$")]
Facet = Annotated[str, Field(min_length=1, max_length=200)]
Query = Annotated[str, Field(min_length=1, max_length=1000, description="What to look for, in words.")]
Dataset = Annotated[str, Field(min_length=1, max_length=120, description="Slot name (or its id).")]
DocumentId = Annotated[
    str, Field(min_length=1, max_length=200, description="documentId from a search record.")
]
DocName = Annotated[
    str, Field(min_length=1, max_length=180, description="Document name; unique in its slot.")
]
Glob = Annotated[str, Field(max_length=500)]
Globs = Annotated[list[Glob], Field(max_length=200)]
Threshold = Annotated[float, Field(ge=0, le=1, description="Drop records scoring below this (0..1).")]
AuditClass = Literal["stale-plans", "missing-metadata", "stale-project-lore", "duplicate-error-pattern"]


class SearchFilters(BaseModel):
    """Metadata filters, ANDed. `scope` defaults to this project; "*" searches every project."""

    model_config = ConfigDict(extra="forbid")
    atom_type: AtomType | None = None
    project_module: Facet | None = None
    language: Facet | None = None
    task_type: Facet | None = None
    error_pattern: Facet | None = None
    tags: str | list[Facet] | None = Field(
        None, description="Tags (exact match, all required); a list or CSV."
    )
    scope: Facet | None = None


class SaveMetadata(BaseModel):
    model_config = ConfigDict(extra="forbid")
    atom_type: AtomType | None = None
    tags: str | list[Facet] | None = None
    project_module: str | None = Field(None, max_length=200)
    language: str | None = Field(None, max_length=200)
    task_type: str | None = Field(None, max_length=200)
    error_pattern: str | None = Field(None, max_length=200)


class LessonMetadata(BaseModel):
    model_config = ConfigDict(extra="forbid")
    project_module: Facet
    task_type: Facet
    error_pattern: Annotated[
        str,
        Field(
            min_length=1,
            max_length=120,
            pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$",
            description="kebab-case slug naming the mistake; the lesson's identity.",
        ),
    ]
    language: Facet | None = None
    tags: str | None = Field(None, max_length=500, description="CSV tags (or use the tags argument).")


def _dump(model: BaseModel | None) -> dict[str, Any] | None:
    return None if model is None else model.model_dump(exclude_none=True)


def _context(ctx: ToolContext) -> kn.KnowledgeContext:
    """The knowledge operations' view of the bridge: its store, scope and result cap."""
    state = state_of(ctx)
    settings = state.settings
    freshness = Freshness.of(settings)
    recalled = state.recalls.note if state.recalls is not None else None
    return kn.KnowledgeContext(
        state.knowledge,
        settings.project_scope,
        settings.search.max_results,
        recalled,
        freshness,
        max_document_chars=settings.intake.max_document_chars,
        threshold=settings.search.score_threshold,
    )


_BEST_EFFORT = (
    "Also return the closest records under scoreThreshold, each marked bestEffort: true "
    "(for when nothing relevant enough was found and a guess is better than nothing)."
)


@tool("Search knowledge memory", READ_ONLY)
async def search_memory(
    ctx: ToolContext,
    query: Query,
    datasets: Annotated[list[Dataset] | None, Field(description="Slots to search (default: all).")] = None,
    datasetIds: Annotated[list[Dataset] | None, Field(description="Legacy alias of datasets.")] = None,
    filters: SearchFilters | None = None,
    scoreThreshold: Threshold | None = None,
    maxResults: Annotated[int | None, Field(ge=1, le=50)] = None,
    bestEffort: Annotated[bool, Field(description=_BEST_EFFORT)] = False,
) -> SearchMemoryResult:
    """Hybrid (keyword + semantic) search over knowledge documents, best first.

    By default only this project's documents are searched (`injectedFilters.scope`);
    pass filters.scope="*" for every project. Each record carries documentId, slot,
    score, metadata and the passage, fenced as untrusted data. A score is calibrated
    relevance (0..1, the same meaning for every query); records under scoreThreshold
    (default: the project's measured threshold) are left out, so an empty result means
    nothing relevant is stored (`hint` says what to try).
    """
    return await kn.search_memory(
        _context(ctx),
        query=query,
        datasets=datasets or datasetIds,
        filters=_dump(filters),
        score_threshold=scoreThreshold,
        max_results=maxResults,
        best_effort=bestEffort,
    )


@tool("Recall lessons before work", READ_ONLY)
async def recall_lessons(
    ctx: ToolContext,
    query: Query,
    project_module: Facet | None = None,
    language: Facet | None = None,
    task_type: Facet | None = None,
    error_pattern: Facet | None = None,
    tags: list[Facet] | None = None,
    includeKnowledge: bool = True,
    scoreThreshold: Threshold = 0.55,
    maxResults: Annotated[int, Field(ge=1, le=20)] = 5,
    bestEffort: Annotated[bool, Field(description=_BEST_EFFORT)] = False,
) -> RecallResult:
    """Lessons from past corrections that apply to this task; call before non-trivial work.

    Tries the strictest filters first, then drops error_pattern, language and
    task_type in turn until enough lessons are found; adds the best bug-root-cause
    and feedback-rule from knowledge for the project_module.
    """
    facets = {
        "project_module": project_module,
        "language": language,
        "task_type": task_type,
        "error_pattern": error_pattern,
    }
    return await kn.recall_lessons(
        _context(ctx),
        query=query,
        facets={k: v for k, v in facets.items() if v},
        tags=tags,
        include_knowledge=includeKnowledge,
        score_threshold=scoreThreshold,
        max_results=maxResults,
        best_effort=bestEffort,
    )


@tool("Save a lesson", WRITE)
async def save_lesson(
    ctx: ToolContext,
    title: Annotated[str, Field(min_length=1, max_length=180)],
    body: Annotated[str, Field(min_length=1, max_length=10_000)],
    metadata: LessonMetadata,
    tags: list[Facet] | None = None,
    evidence: Annotated[str | None, Field(max_length=500)] = None,
) -> LessonResult:
    """Record what to do differently next time, right after the user corrects you.

    The same project_module + error_pattern updates one lesson in place (its name is
    lesson-<scope>-<project_module>-<error_pattern>.md), so repeating a lesson
    refines it instead of piling up copies.
    """
    return await kn.save_lesson(
        _context(ctx),
        title=title,
        body=body,
        metadata=metadata.model_dump(exclude_none=True),
        tags=tags,
        evidence=evidence,
    )


@tool("Save a document to a slot", WRITE)
async def save_to_dataset(
    ctx: ToolContext,
    dataset: Dataset,
    name: DocName,
    text: Annotated[str, Field(min_length=1, max_length=500_000)],
    metadata: SaveMetadata | None = None,
) -> SaveResult:
    """Create a document, or update the one with the same name in that slot in place.

    Use slot knowledge for facts, decisions and conventions; plans and
    investigations for those. Secrets in the name, the text and the metadata are
    redacted before anything is stored.
    """
    return await kn.save_to_dataset(
        _context(ctx), dataset=dataset, name=name, text=text, metadata=_dump(metadata)
    )


@tool("Write a document", WRITE)
async def write_memory(
    ctx: ToolContext,
    name: DocName,
    text: Annotated[str, Field(min_length=20, max_length=200_000)],
    datasetId: Dataset | None = None,
    supersedes: DocumentId | None = None,
    supersedesAction: Literal["disable", "delete"] = "disable",
) -> WriteResult:
    """Write a document (default slot: knowledge); optionally retire an older one.

    With `supersedes`, that document (same slot) is disabled or deleted after the
    write; it is checked first, so a wrong id writes nothing.
    """
    return await kn.write_memory(
        _context(ctx),
        name=name,
        text=text,
        dataset=datasetId or "knowledge",
        supersedes=supersedes,
        action=supersedesAction,
        require_supersedes=False,
    )


@tool("Replace a document", WRITE)
async def update_memory(
    ctx: ToolContext,
    name: DocName,
    text: Annotated[str, Field(min_length=20, max_length=200_000)],
    supersedes: DocumentId,
    datasetId: Dataset | None = None,
    supersedesAction: Literal["disable", "delete"] = "disable",
) -> WriteResult:
    """Write a new version of a document and retire the old one (same slot)."""
    return await kn.write_memory(
        _context(ctx),
        name=name,
        text=text,
        dataset=datasetId or "knowledge",
        supersedes=supersedes,
        action=supersedesAction,
        require_supersedes=True,
    )


@tool("List knowledge slots", READ_ONLY)
async def list_datasets(ctx: ToolContext) -> ListDatasetsResult:
    """Every knowledge slot with its id and document count."""
    return await kn.list_datasets(state_of(ctx).knowledge)


@tool("Create a knowledge slot", WRITE)
async def create_dataset(
    ctx: ToolContext,
    name: Slug,
    description: Annotated[str | None, Field(max_length=500)] = None,
) -> CreateDatasetResult:
    """Create a slot (idempotent: an existing one is returned unchanged)."""
    return await kn.create_dataset(state_of(ctx).knowledge, name, description or "")


@tool("Delete a document", DESTRUCTIVE)
async def delete_document(ctx: ToolContext, dataset: Dataset, documentId: DocumentId) -> DocumentStatusResult:
    """Delete a document permanently. Prefer disable_document to retire one reversibly."""
    return await kn.set_document_status(state_of(ctx).knowledge, dataset, documentId, "delete")


@tool("Disable a document", WRITE)
async def disable_document(
    ctx: ToolContext, dataset: Dataset, documentId: DocumentId
) -> DocumentStatusResult:
    """Hide a document from search without deleting it."""
    return await kn.set_document_status(state_of(ctx).knowledge, dataset, documentId, "disable")


@tool("Enable a document", WRITE)
async def enable_document(ctx: ToolContext, dataset: Dataset, documentId: DocumentId) -> DocumentStatusResult:
    """Make a disabled document searchable again."""
    return await kn.set_document_status(state_of(ctx).knowledge, dataset, documentId, "enable")


VersionNumber = Annotated[int, Field(ge=1, le=2**62)]


@tool("Show a document's history", READ_ONLY)
async def document_history(
    ctx: ToolContext,
    dataset: Dataset,
    documentId: Annotated[
        str | None, Field(min_length=1, max_length=200, description="The document's id (a deleted one too).")
    ] = None,
    name: Annotated[str | None, Field(min_length=1, max_length=180, description="Or its name.")] = None,
    limit: Annotated[int, Field(ge=1, le=200, description="How many versions, newest first.")] = 10,
    before: Annotated[VersionNumber | None, Field(description="Only versions older than this one.")] = None,
) -> DocumentHistoryResult:
    """Every version of a knowledge document, newest first, deleted documents included.

    Each version is the document's whole state after one change (text, metadata, enabled,
    maintenance marks), with when, what changed and the tool or command that changed it.
    Roll back with document_rollback."""
    store = state_of(ctx).knowledge
    slot, doc = await _document_history.locate_document(store, dataset, document_id=documentId, name=name)
    result = await _document_history.document_history(store, slot, doc, limit=limit, before=before)
    for version in result.versions:
        version.text = fence(version.text, f"{slot}/{doc} version {version.version}")
    return result


@tool("Roll a document back", DESTRUCTIVE)
async def document_rollback(
    ctx: ToolContext,
    dataset: Dataset,
    version: Annotated[VersionNumber, Field(description="The version to bring back (document_history's).")],
    documentId: Annotated[
        str | None, Field(min_length=1, max_length=200, description="The document's id (a deleted one too).")
    ] = None,
    name: Annotated[str | None, Field(min_length=1, max_length=180, description="Or its name.")] = None,
    expected_version: Annotated[
        VersionNumber | None,
        Field(description="The newest version you saw; nothing is written if the document changed since."),
    ] = None,
) -> DocumentRollbackResult:
    """Bring a document back to an earlier version; also brings back a deleted document.

    The roll-back is itself a new version, so it can be rolled back too."""
    state = state_of(ctx)
    slot, doc = await _document_history.locate_document(
        state.knowledge, dataset, document_id=documentId, name=name
    )
    result = await _document_history.rollback_document(
        state.knowledge, slot, doc, version, expected_version=expected_version
    )
    state.metrics.write_total.inc()
    return result


@tool("Audit memory", READ_ONLY, name="audit_memory")
async def audit_memory_tool(
    ctx: ToolContext,
    classes: list[AuditClass] | None = None,
    staleLoreDays: Annotated[int | None, Field(ge=1, le=3650)] = None,
) -> AuditResult:
    """List documents worth retiring (stale plans, missing metadata, old project lore,
    duplicate lessons), with a suggested action each. Changes nothing."""
    state = state_of(ctx)
    return await _audit.audit_memory(
        state.knowledge,
        scope=state.settings.project_scope,
        classes=classes,
        stale_lore_days=staleLoreDays or state.settings.maintain.audit_lore_stale_days,
    )


@tool("Project memory consolidation", READ_ONLY)
async def consolidate_memory(
    ctx: ToolContext,
    slots: Annotated[
        list[Dataset] | None, Field(max_length=50, description="Refine slots to project (default: all).")
    ] = None,
) -> ConsolidateResult:
    """What maintenance would act on, per slot with the `refine` policy: working-set size,
    disabled count, lessons sharing a lesson key (project_module|task_type|error_pattern),
    stale documents and old archived ones. Changes nothing. Refuses (ok false, refusals)
    while a slot has no policy or one other than refine or none."""
    state = state_of(ctx)
    settings = state.settings
    return await maintenance.consolidate_memory(
        state.knowledge,
        scope=settings.project_scope,
        slots=slots,
        policies=settings.maintain.consolidate_policies,
        stale_after_months=settings.maintain.consolidate_stale_after_months,
        archive_age_days=settings.maintain.consolidate_archive_age_days,
        now=time.time(),
    )


@tool("Scan workspace documents", READ_ONLY)
async def scan_documents(
    ctx: ToolContext,
    include: Annotated[Globs | None, Field(description="Globs replacing the default includes.")] = None,
    ignore: Annotated[Globs | None, Field(description="Globs added to the ignore list.")] = None,
) -> ScanResult:
    """Documentation files in the project that absorb_files could add (symlinks skipped;
    private files, such as git-ignored or secret ones, listed apart under `refused`)."""
    settings = state_of(ctx).settings
    return await _absorb.scan_documents(
        Path(settings.project), include, ignore, allow=settings.intake.absorb_allow
    )


@tool("Absorb workspace files", WRITE)
async def absorb_files(
    ctx: ToolContext,
    files: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=1000)]], Field(min_length=1, max_length=500)
    ],
    dataset: Dataset | None = None,
    dryRun: bool = False,
) -> AbsorbResult:
    """Add workspace files as documents named by their relative path (re-absorbing
    updates in place). Paths outside the workspace, symlinks leading out of it, files
    over the size limit, and private files (memctl's .memory/, .git/, git-ignored files,
    well-known secret files such as .env or keys) are refused per file with the reason;
    secrets in what is absorbed are redacted."""
    settings = state_of(ctx).settings
    return await _absorb.absorb_files(
        _context(ctx),
        Path(settings.project),
        files,
        dataset=dataset or settings.intake.absorb_default_dataset,
        dry_run=dryRun,
        max_file_bytes=settings.intake.absorb_max_file_bytes,
        allow=settings.intake.absorb_allow,
    )


@tool("Show memory configuration", READ_ONLY)
async def get_memory_config(ctx: ToolContext) -> MemoryConfig:
    """How this memory is set up: stores, slots, scope, embedding model. Shows no secret."""
    state = state_of(ctx)
    settings = state.settings
    embedder = getattr(state.knowledge, "embedder", None)
    return MemoryConfig(
        project=str(settings.project),
        scope=settings.project_scope,
        entryStore=state.store.url,
        knowledgeStore=state.knowledge.url,
        datasetSlots=[
            SlotRef(name=name, configuredId=id_) for name, id_ in (await state.knowledge.slot_ids()).items()
        ],
        embeddingModel=getattr(embedder, "name", None),
        embeddingFailure=getattr(embedder, "failure", None),
        maxResults=settings.search.max_results,
        absorbDefaultDataset=settings.intake.absorb_default_dataset,
        authTokenConfigured=settings.serve.token_file is not None or settings.serve.auth_token is not None,
    )


@tool("Maintenance job health", READ_ONLY)
async def cron_health(
    ctx: ToolContext,
    limit: Annotated[int, Field(ge=1, le=100, description="How many recent runs to list.")] = 20,
) -> CronHealthResult:
    """Whether the project's scheduled maintenance (memctl maintain) is healthy: the last
    run, the last success and failure, recent runs and open escalations (the same error
    three runs in a row). Reads the job's records; changes nothing."""
    project = state_of(ctx).settings.project
    return await anyio.to_thread.run_sync(lambda: maintenance.cron_health(project, limit=limit))


KNOWLEDGE_TOOLS = knowledge_tools.names
