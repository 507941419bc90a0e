"""The knowledge tools, with Local Dify MCP Memory's names and argument shapes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict, Field

from .._errors import NotFound, StoreUnavailable
from ..core import _knowledge as kn
from ..core._audit import audit_memory
from ..core._glob import GlobSet
from ..core._knowledge import AtomType
from ..core._workspace import (
    DEFAULT_IGNORE,
    DEFAULT_INCLUDE,
    AbsorbRead,
    read_workspace_file,
    scan_workspace,
)
from ..stores._knowledge import DocMetadata
from ._register import DESTRUCTIVE, READ_ONLY, WRITE, ToolResult, tool_registrar
from ._state import AppState

__all__ = ["KNOWLEDGE_TOOLS", "register_knowledge_tools"]

KNOWLEDGE_TOOLS = (
    "search_memory",
    "recall_lessons",
    "save_lesson",
    "save_to_dataset",
    "write_memory",
    "update_memory",
    "list_datasets",
    "create_dataset",
    "delete_document",
    "disable_document",
    "enable_document",
    "audit_memory",
    "scan_documents",
    "absorb_files",
    "get_memory_config",
)


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
SCAN_SECONDS = 20.0  # a workspace scan gives up after this
READ_SECONDS = 10.0  # reading one file to absorb gives up after this
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


def register_knowledge_tools(mcp: MCPServer[Any], state: AppState) -> None:
    settings = state.settings
    ctx = kn.KnowledgeContext(state.knowledge, settings.project_scope, settings.max_results)
    tool = tool_registrar(mcp, settings.tool_timeout_seconds, state.backends.suspect)

    @tool("Search knowledge memory", READ_ONLY)
    async def search_memory(
        query: Query,
        datasets: Annotated[
            list[Dataset] | None, Field(description="Slots to search (default: all).")
        ] = None,
        datasetIds: Annotated[list[Dataset] | None, Field(description="Legacy alias of datasets.")] = None,
        filters: SearchFilters | None = None,
        scoreThreshold: Threshold | None = None,
        maxResults: Annotated[int | None, Field(ge=1, le=50)] = None,
    ) -> ToolResult:
        """Hybrid (keyword + semantic) search over knowledge documents, best first.

        By default only this project's documents are searched (`injectedFilters.scope`);
        pass filters.scope="*" for every project. Each record carries documentId, slot,
        score, metadata and the passage, fenced as untrusted data.
        """
        return await kn.search_memory(
            ctx,
            query=query,
            datasets=datasets or datasetIds,
            filters=_dump(filters),
            score_threshold=scoreThreshold,
            max_results=maxResults,
        )

    @tool("Recall lessons before work", READ_ONLY)
    async def recall_lessons(
        query: Query,
        project_module: Facet | None = None,
        language: Facet | None = None,
        task_type: Facet | None = None,
        error_pattern: Facet | None = None,
        tags: list[Facet] | None = None,
        includeKnowledge: bool = True,
        scoreThreshold: Threshold = 0.35,
        maxResults: Annotated[int, Field(ge=1, le=20)] = 5,
    ) -> ToolResult:
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
            ctx,
            query=query,
            facets={k: v for k, v in facets.items() if v},
            tags=tags,
            include_knowledge=includeKnowledge,
            score_threshold=scoreThreshold,
            max_results=maxResults,
        )

    @tool("Save a lesson", WRITE)
    async def save_lesson(
        title: Annotated[str, Field(min_length=1, max_length=180)],
        body: Annotated[str, Field(min_length=1, max_length=10_000)],
        metadata: LessonMetadata,
        tags: list[Facet] | None = None,
        evidence: Annotated[str | None, Field(max_length=500)] = None,
    ) -> ToolResult:
        """Record what to do differently next time, right after the user corrects you.

        The same project_module + error_pattern updates one lesson in place (its name is
        lesson-<scope>-<project_module>-<error_pattern>.md), so repeating a lesson
        refines it instead of piling up copies.
        """
        return await kn.save_lesson(
            ctx,
            title=title,
            body=body,
            metadata=metadata.model_dump(exclude_none=True),
            tags=tags,
            evidence=evidence,
        )

    @tool("Save a document to a slot", WRITE)
    async def save_to_dataset(
        dataset: Dataset,
        name: DocName,
        text: Annotated[str, Field(min_length=1, max_length=500_000)],
        metadata: SaveMetadata | None = None,
    ) -> ToolResult:
        """Create a document, or update the one with the same name in that slot in place.

        Use slot knowledge for facts, decisions and conventions; plans and
        investigations for those. Secrets are redacted before anything is stored.
        """
        return await kn.save_to_dataset(ctx, dataset=dataset, name=name, text=text, metadata=_dump(metadata))

    @tool("Write a document", WRITE)
    async def write_memory(
        name: DocName,
        text: Annotated[str, Field(min_length=20, max_length=200_000)],
        datasetId: Dataset | None = None,
        supersedes: DocumentId | None = None,
        supersedesAction: Literal["disable", "delete"] = "disable",
    ) -> ToolResult:
        """Write a document (default slot: knowledge); optionally retire an older one.

        With `supersedes`, that document (same slot) is disabled or deleted after the
        write; it is checked first, so a wrong id writes nothing.
        """
        return await kn.write_memory(
            ctx,
            name=name,
            text=text,
            dataset=datasetId or "knowledge",
            supersedes=supersedes,
            action=supersedesAction,
            require_supersedes=False,
        )

    @tool("Replace a document", WRITE)
    async def update_memory(
        name: DocName,
        text: Annotated[str, Field(min_length=20, max_length=200_000)],
        supersedes: DocumentId,
        datasetId: Dataset | None = None,
        supersedesAction: Literal["disable", "delete"] = "disable",
    ) -> ToolResult:
        """Write a new version of a document and retire the old one (same slot)."""
        return await kn.write_memory(
            ctx,
            name=name,
            text=text,
            dataset=datasetId or "knowledge",
            supersedes=supersedes,
            action=supersedesAction,
            require_supersedes=True,
        )

    @tool("List knowledge slots", READ_ONLY)
    async def list_datasets() -> ToolResult:
        """Every knowledge slot with its id and document count."""
        slots = await state.knowledge.list_slots()
        return {
            "datasets": [
                {
                    "id": s.id,
                    "name": s.name,
                    "description": s.description,
                    "documentCount": s.document_count,
                    "indexingTechnique": s.indexing_technique,
                }
                for s in slots
            ],
            "declaredLocally": [{"name": s.name, "configuredId": s.id} for s in slots],
        }

    @tool("Create a knowledge slot", WRITE)
    async def create_dataset(
        name: Slug,
        description: Annotated[str | None, Field(max_length=500)] = None,
    ) -> ToolResult:
        """Create a slot (idempotent: an existing one is returned unchanged)."""
        slot, created = await state.knowledge.create_slot(name, description or "")
        fields = [{"name": f, "ok": True} for f in DocMetadata.__dataclass_fields__]
        return {
            "ok": True,
            "created": created,
            "dataset": {"id": slot.id, "name": slot.name, "description": slot.description},
            "metadataSchema": {"installed": fields, "failed": [], "complete": True},
        }

    async def _document_status(dataset: str, document_id: str, action: str) -> ToolResult:
        slot = await kn.resolve_slot(state.knowledge, dataset)
        if action == "delete":
            done = await state.knowledge.delete(slot, document_id)
        else:
            done = await state.knowledge.set_enabled(slot, document_id, action == "enable")
        if not done:
            raise NotFound(f"document {document_id} not found in slot {slot}")
        slot_id = next(s.id for s in await state.knowledge.list_slots() if s.name == slot)
        return {
            "ok": True,
            "datasetId": slot_id,
            "slot": slot,
            "documentId": document_id,
            "result": action + "d",
        }

    @tool("Delete a document", DESTRUCTIVE)
    async def delete_document(dataset: Dataset, documentId: DocumentId) -> ToolResult:
        """Delete a document permanently. Prefer disable_document to retire one reversibly."""
        return await _document_status(dataset, documentId, "delete")

    @tool("Disable a document", WRITE)
    async def disable_document(dataset: Dataset, documentId: DocumentId) -> ToolResult:
        """Hide a document from search without deleting it."""
        return await _document_status(dataset, documentId, "disable")

    @tool("Enable a document", WRITE)
    async def enable_document(dataset: Dataset, documentId: DocumentId) -> ToolResult:
        """Make a disabled document searchable again."""
        return await _document_status(dataset, documentId, "enable")

    @tool("Audit memory", READ_ONLY, name="audit_memory")
    async def audit_memory_tool(
        classes: list[AuditClass] | None = None,
        staleLoreDays: Annotated[int | None, Field(ge=1, le=3650)] = None,
    ) -> ToolResult:
        """List documents worth retiring (stale plans, missing metadata, old project lore,
        duplicate lessons), with a suggested action each. Changes nothing."""
        return await audit_memory(
            state.knowledge,
            scope=ctx.scope,
            classes=classes,
            stale_lore_days=staleLoreDays or settings.audit_lore_stale_days,
        )

    @tool("Scan workspace documents", READ_ONLY)
    async def scan_documents(
        include: Annotated[Globs | None, Field(description="Globs replacing the default includes.")] = None,
        ignore: Annotated[Globs | None, Field(description="Globs added to the ignore list.")] = None,
    ) -> ToolResult:
        """Documentation files in the project that absorb_files could add (symlinks skipped)."""
        includes = tuple(include or DEFAULT_INCLUDE)
        ignores = DEFAULT_IGNORE + tuple(ignore or ())
        matchers = GlobSet(includes, field="include"), GlobSet(ignores, field="ignore")
        deadline = time.monotonic() + SCAN_SECONDS
        files = None
        with anyio.move_on_after(SCAN_SECONDS + 1):  # the scan stops itself; this covers a hung stat
            files = await anyio.to_thread.run_sync(
                scan_workspace, settings.project, *matchers, deadline, abandon_on_cancel=True
            )
        if files is None:
            raise StoreUnavailable(
                "scan_documents: the file system did not answer in time", operation="scan_documents"
            )
        return {
            "root": str(settings.project),
            "include": list(includes),
            "ignore": list(ignores),
            "total": len(files),
            "files": [f.to_dict() for f in files],
        }

    async def _read(requested: str) -> AbsorbRead:
        """One file, read in a worker thread; a read that hangs is refused for that file."""
        root, limit = Path(settings.project), settings.absorb_max_file_bytes
        with anyio.move_on_after(READ_SECONDS):
            return await anyio.to_thread.run_sync(
                read_workspace_file, root, requested, limit, abandon_on_cancel=True
            )
        return AbsorbRead(requested, error=f"reading it did not finish within {READ_SECONDS:g} s")

    @tool("Absorb workspace files", WRITE)
    async def absorb_files(
        files: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=1000)]], Field(min_length=1, max_length=500)
        ],
        dataset: Dataset | None = None,
        dryRun: bool = False,
    ) -> ToolResult:
        """Add workspace files as documents named by their relative path (re-absorbing
        updates in place). Paths outside the workspace, symlinks leading out of it, and
        files over the size limit are refused per file; secrets are redacted."""
        slot = await kn.resolve_slot(state.knowledge, dataset or settings.absorb_default_dataset)
        results: list[dict[str, Any]] = []
        for requested in files:
            read = await _read(requested)
            if read.error is not None or read.text is None:
                results.append({"file": requested, "ok": False, "error": read.error})
            elif dryRun:
                results.append(
                    {
                        "file": requested,
                        "ok": True,
                        "dryRun": True,
                        "docName": read.rel_path,
                        "size": read.size,
                    }
                )
            else:
                saved = await kn.save_to_dataset(
                    ctx, dataset=slot, name=read.rel_path, text=read.text, metadata={"atom_type": "reference"}
                )
                results.append(
                    {
                        "file": requested,
                        "ok": True,
                        "docName": read.rel_path,
                        "size": read.size,
                        "documentId": saved["documentId"],
                        "created": saved["created"],
                    }
                )
        succeeded = sum(1 for r in results if r["ok"])
        slot_id = next(s.id for s in await state.knowledge.list_slots() if s.name == slot)
        return {
            "datasetId": slot_id,
            "datasetSlot": slot,
            "total": len(results),
            "succeeded": succeeded,
            "failed": len(results) - succeeded,
            "results": results,
        }

    @tool("Show memory configuration", READ_ONLY)
    async def get_memory_config() -> ToolResult:
        """How this memory is set up: stores, slots, scope, embedding model. Shows no secret."""
        embedder = getattr(state.knowledge, "embedder", None)
        return {
            "project": str(settings.project),
            "scope": ctx.scope,
            "entryStore": state.store.url,
            "knowledgeStore": state.knowledge.url,
            "datasetSlots": [
                {"name": s.name, "configuredId": s.id} for s in await state.knowledge.list_slots()
            ],
            "embeddingModel": getattr(embedder, "name", None),
            "embeddingFailure": getattr(embedder, "failure", None),
            "maxResults": settings.max_results,
            "absorbDefaultDataset": settings.absorb_default_dataset,
            "authTokenConfigured": settings.token_file is not None or settings.auth_token is not None,
        }
