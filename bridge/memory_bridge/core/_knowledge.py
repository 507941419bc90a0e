"""The knowledge operations behind search_memory, recall_lessons, save_lesson and friends.

Result shapes follow Local Dify MCP Memory (its spec, section 4) with its known flaws
fixed: every record names its document id, slot, score and metadata; every write is
redacted and carries the project's `scope`; a default search finds what this project
saved; lessons upsert by a deterministic name; a failing ladder rung is reported, not
fatal; an unknown slot is an error, never a fallback.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar, get_args

import anyio.to_thread

from .._errors import InvalidInput, NotFound, StoreError
from ..stores._clock import now_instant
from ..stores._knowledge import METADATA_FIELDS, DocMetadata, KnowledgeFilter, KnowledgeStore, SearchHit
from ..stores._relevance import calibration
from ..stores._versioned import unversioned
from ..stores.dify import DurableKnowledgeStore
from ._fence import fence
from ._freshness import Freshness, rerank
from ._redact import redact
from ._redact_fields import redact_metadata
from ._results import (
    CreateDatasetResult,
    DatasetInfo,
    DatasetRef,
    DocumentStatusResult,
    LadderRung,
    LessonResult,
    ListDatasetsResult,
    Metadata,
    MetadataField,
    MetadataSchema,
    RecallResult,
    Record,
    SaveResult,
    SearchMemoryResult,
    SlotRef,
    Supersession,
    WriteResult,
)

__all__ = [
    "ATOM_TYPES",
    "AtomType",
    "KnowledgeContext",
    "create_dataset",
    "lesson_name",
    "list_datasets",
    "nothing_found",
    "recall_lessons",
    "resolve_slot",
    "save_lesson",
    "save_to_dataset",
    "search_memory",
    "set_document_status",
    "slot_id",
    "slugify",
    "supersede",
    "write_memory",
]

AtomType = Literal[
    "decision",
    "bug-root-cause",
    "feedback-rule",
    "project-lore",
    "reference",
    "pattern-gotcha",
    "self-improvement-lesson",
    "plan",
]
"""The kinds of knowledge atom: the one vocabulary of the tools, the stores' metadata and capture."""
ATOM_TYPES: tuple[AtomType, ...] = get_args(AtomType)
LESSON_TYPE = "self-improvement-lesson"
LESSON_SLOT = "self_improvement"
_LADDER_DROPS = ("error_pattern", "language", "task_type")
_ALL_SCOPES = "*"
_DONE: dict[str, Literal["deleted", "disabled", "enabled"]] = {
    "delete": "deleted",
    "disable": "disabled",
    "enable": "enabled",
}
_Saved = TypeVar("_Saved", bound=SaveResult)


@dataclass(frozen=True, slots=True)
class KnowledgeContext:
    """What the operations need besides the store."""

    store: KnowledgeStore
    scope: str
    max_results: int = 8
    recalled: Callable[[Iterable[tuple[str, str]]], None] | None = None  # (slot, id) a search returned
    freshness: Freshness = field(default_factory=Freshness)  # the weights of age and use in ranking
    clock: Callable[[], float] = time.time
    max_document_chars: int | None = None  # longest text a save accepts (None: no limit of its own)
    threshold: float = field(default_factory=lambda: calibration().threshold)  # when the caller gives none

    def threshold_of(self, given: float | None, best_effort: bool) -> tuple[float, float | None]:
        """The threshold in force, and the one to search with (None: best effort, everything)."""
        applied = self.threshold if given is None else given
        return applied, None if best_effort else applied

    def candidates(self, wanted: int) -> int:
        """How many hits to ask the store for, so re-ranking can lift one from below the cut."""
        return self.freshness.depth(wanted)

    def rerank(self, hits: list[SearchHit], wanted: int) -> list[SearchHit]:
        """The best `wanted` hits once age and use are weighed in."""
        return rerank(hits, self.freshness, self.clock())[:wanted]

    def note_recalled(self, hits: Iterable[SearchHit]) -> None:
        """Hand the returned documents to recall stamping (it returns at once)."""
        if self.recalled is not None:
            self.recalled((hit.slot, hit.document_id) for hit in hits)


def slugify(text: str, *, limit: int = 60) -> str:
    """Lower-case ASCII words joined by '-'; text in any script keeps a stable, distinct
    name (non-ASCII letters become their code points) instead of collapsing to 'untitled'."""
    out: list[str] = []
    for char in unicodedata.normalize("NFKD", text.lower()):
        if char.isascii() and char.isalnum():
            out.append(char)
        elif char.isalnum():
            out.append(f"u{ord(char):x}")
        elif unicodedata.category(char) != "Mn":
            out.append("-")
    slug = re.sub(r"-+", "-", "".join(out)).strip("-")[:limit].strip("-")
    return slug or "untitled"


def _filter_of(filters: dict[str, Any] | None, scope: str) -> tuple[KnowledgeFilter, dict[str, str] | None]:
    """Caller filters plus the injected project scope (unless the caller set `scope`)."""
    given = dict(filters or {})
    injected = None
    if "scope" not in given:
        given["scope"] = scope
        injected = {"scope": scope}
    if given.get("scope") == _ALL_SCOPES:
        given.pop("scope")
    tags = given.pop("tags", None)
    tag_list = tuple(
        t.strip() for t in (tags.split(",") if isinstance(tags, str) else tags or ()) if t.strip()
    )
    return KnowledgeFilter(tags=tag_list, **given), injected


def nothing_found(threshold: float, *, what: str = "document", flag: str = "bestEffort: true") -> str:
    """What to tell someone whose search found nothing relevant enough."""
    return (
        f"Nothing matched: no {what} scored at least {threshold:g} (calibrated relevance). "
        f"Try fewer, more specific words, another slot or filter, or {flag} for the closest "
        "matches below the threshold."
    )


def _record(
    hit: SearchHit, slot_ids: dict[str, str], threshold: float | None = None, **lesson: Any
) -> Record:
    """A hit as the seed's record (with recall_lessons' `kind` and `rungIndex` when given);
    below `threshold` (given in a best-effort search) marked."""
    record = Record(
        **lesson,
        datasetId=slot_ids.get(hit.slot, hit.slot),
        slot=hit.slot,
        score=hit.score,
        segmentId=f"{hit.document_id}:{hit.position}",
        documentId=hit.document_id,
        documentName=hit.document_name,
        position=hit.position,
        status="completed",
        enabled=hit.enabled,
        keywords=[],
        wordCount=hit.word_count,
        metadata=Metadata.of(hit.metadata),
        content=fence(hit.content, hit.origin or "memory"),
    )
    if threshold is not None and hit.score < threshold:
        record.bestEffort = True
    return record


async def _slot_ids(store: KnowledgeStore) -> dict[str, str]:
    return await store.slot_ids()


async def slot_id(store: KnowledgeStore, slot: str) -> str:
    """The id of the slot named `slot` (which exists)."""
    return (await _slot_ids(store))[slot]


async def resolve_slot(store: KnowledgeStore, name_or_id: str) -> str:
    """The slot name for a name or id; an unknown one is an error naming the known slots."""
    slots = await store.slot_ids()
    for name, slot_id in slots.items():
        if name_or_id in (name, slot_id):
            return name
    known = ", ".join(slots)
    raise InvalidInput("dataset", f"unknown slot {name_or_id!r} (known: {known})")


async def search_memory(
    ctx: KnowledgeContext,
    *,
    query: str,
    datasets: list[str] | None,
    filters: dict[str, Any] | None,
    score_threshold: float | None,
    max_results: int | None,
    best_effort: bool = False,
) -> SearchMemoryResult:
    """Hybrid search; hits under the threshold (the caller's, else the measured default) are
    left out, or with `best_effort` returned marked `bestEffort`."""
    slot_ids = await _slot_ids(ctx.store)
    names = [await resolve_slot(ctx.store, d) for d in datasets] if datasets else list(slot_ids)
    flt, injected = _filter_of(filters, ctx.scope)
    limit = max_results or ctx.max_results
    applied, searched = ctx.threshold_of(score_threshold, best_effort)
    page = await ctx.store.search(names, query, flt, top_k=ctx.candidates(limit), score_threshold=searched)
    hits = ctx.rerank(page.hits, limit)
    ctx.note_recalled(hits)
    result = SearchMemoryResult(
        query=query,
        datasetsSearched=names,
        filters=filters,
        injectedFilters=injected,
        scoreThreshold=applied,
        errors=[],
        totalRecords=page.total,
        records=[_record(hit, slot_ids, applied if best_effort else None) for hit in hits],
    )
    if best_effort:
        result.bestEffort = True
    if not hits:
        result.hint = nothing_found(applied)
    if page.degraded:
        result.degraded = page.degraded
    return result


def _rungs(base: dict[str, str]) -> list[dict[str, str]]:
    rungs = [dict(base)]
    current = dict(base)
    for facet in _LADDER_DROPS:
        current.pop(facet, None)
        if current != rungs[-1]:
            rungs.append(dict(current))
    return rungs


async def recall_lessons(
    ctx: KnowledgeContext,
    *,
    query: str,
    facets: dict[str, str],
    tags: list[str] | None,
    include_knowledge: bool,
    score_threshold: float,
    max_results: int,
    best_effort: bool = False,
) -> RecallResult:
    """The seed's fall-back ladder: strict filters first, then drop error_pattern,
    language and task_type in turn (project_module, tags and scope are never dropped);
    stop once min(3, max_results) lessons are found. With `best_effort` hits under the
    threshold are kept, marked `bestEffort`."""
    searched, marked = (None, score_threshold) if best_effort else (score_threshold, None)
    slot_ids = await _slot_ids(ctx.store)
    if LESSON_SLOT not in slot_ids:
        raise InvalidInput("dataset", f"the {LESSON_SLOT} slot does not exist; create it with create_dataset")
    base = {"atom_type": LESSON_TYPE, **{k: v for k, v in facets.items() if v}}
    enough = min(3, max_results)
    hits: list[tuple[int, SearchHit]] = []
    seen: set[str] = set()
    ladder: list[LadderRung] = []
    errors: list[dict[str, Any]] = []
    for index, rung in enumerate(_rungs(base)):
        flt = replace(KnowledgeFilter(**rung, tags=tuple(tags or ())), scope=ctx.scope)
        try:
            page = await ctx.store.search(
                [LESSON_SLOT], query, flt, top_k=ctx.candidates(max_results), score_threshold=searched
            )
        except StoreError as exc:
            errors.append({"rung": index, "filters": rung, "error": str(exc)})
            continue
        added = [hit for hit in ctx.rerank(page.hits, max_results) if hit.document_id not in seen]
        seen.update(hit.document_id for hit in added)
        hits += [(index, hit) for hit in added]
        if added:
            ladder.append(LadderRung(filters=rung, added=len(added)))
        if len(hits) >= enough:
            break
    hits.sort(key=lambda item: (item[0], -item[1].score))
    lessons = [_record(hit, slot_ids, marked, kind="lesson", rungIndex=i) for i, hit in hits[:max_results]]
    ctx.note_recalled(hit for _, hit in hits[:max_results])
    supplementary: list[Record] = []
    module = facets.get("project_module")
    if include_knowledge and module and "knowledge" in slot_ids:
        for atom_type in ("bug-root-cause", "feedback-rule"):
            flt = KnowledgeFilter(atom_type=atom_type, project_module=module, scope=ctx.scope)
            try:
                page = await ctx.store.search(["knowledge"], query, flt, top_k=1, score_threshold=searched)
            except StoreError as exc:
                errors.append({"supplementary": atom_type, "error": str(exc)})
                continue
            supplementary += [_record(hit, slot_ids, marked, kind="knowledge") for hit in page.hits[:1]]
            ctx.note_recalled(page.hits[:1])
    result = RecallResult(
        query=query,
        lessonDataset=LESSON_SLOT,
        ladderUsed=ladder,
        injectedFilters={"scope": ctx.scope},
        scoreThreshold=score_threshold,
        lessonHits=len(lessons),
        supplementaryHits=len(supplementary),
        totalRecords=len(lessons) + len(supplementary),
        errors=errors,
        records=lessons + supplementary,
    )
    if best_effort:
        result.bestEffort = True
    if not lessons and not supplementary:
        result.hint = nothing_found(score_threshold)
    return result


def _metadata(given: dict[str, Any] | None, scope: str) -> DocMetadata:
    fields = dict(given or {})
    tags = fields.pop("tags", ())
    tag_list = tuple(t.strip() for t in (tags.split(",") if isinstance(tags, str) else tags) if t.strip())
    return DocMetadata(
        tags=tuple(dict.fromkeys(tag_list)), scope=scope, **{k: str(v).strip() for k, v in fields.items()}
    )


def _check_size(text: str, limit: int | None) -> None:
    """Refuse a text longer than `limit` characters, before anything is stored."""
    if limit is not None and len(text) > limit:
        raise InvalidInput(
            "text",
            f"is {len(text):,} characters, over the {limit:,}-character limit (setting max_document_chars): "
            "split it into several documents, or raise the limit",
        )


async def _upsert(
    ctx: KnowledgeContext,
    slot: str,
    name: str,
    text: str,
    metadata: DocMetadata,
    origin: str,
    result: type[_Saved],
    **more: Any,
) -> _Saved:
    """Save one document, answered as `result` (a save's keys, then `more`)."""
    name = redact(name.strip())
    if not name:
        raise InvalidInput("name", "must not be empty")
    _check_size(text, ctx.max_document_chars)
    slot_name = await resolve_slot(ctx.store, slot)
    outcome = await ctx.store.upsert(
        slot_name,
        name,
        await anyio.to_thread.run_sync(redact, text),
        redact_metadata(metadata),
        origin=origin,
    )
    return result(
        ok=True,
        documentOk=outcome.text_applied,
        metadataOk=outcome.metadata_applied,
        name=name,
        slot=slot_name,
        datasetId=(await _slot_ids(ctx.store))[slot_name],
        documentId=outcome.document_id,
        created=outcome.created,
        changed=outcome.changed,
        indexingStatus=outcome.indexing_status,
        **more,
    )


async def save_to_dataset(
    ctx: KnowledgeContext, *, dataset: str, name: str, text: str, metadata: dict[str, Any] | None
) -> SaveResult:
    metadata_ = _metadata(metadata, ctx.scope)
    return await _upsert(ctx, dataset, name, text, metadata_, "save_to_dataset", SaveResult)


def lesson_name(scope: str, project_module: str, error_pattern: str) -> str:
    """The one document a lesson lives in: the same error pattern updates it."""
    return f"lesson-{slugify(scope)}-{slugify(project_module)}-{slugify(error_pattern, limit=80)}.md"


async def save_lesson(
    ctx: KnowledgeContext,
    *,
    title: str,
    body: str,
    metadata: dict[str, str],
    tags: list[str] | None,
    evidence: str | None,
) -> LessonResult:
    tag_list = list(tags) if tags else [t.strip() for t in metadata.get("tags", "").split(",") if t.strip()]
    facets = {  # redacted before the lesson's name is made of them
        k: redact(metadata.get(k, "").strip())
        for k in ("project_module", "language", "task_type", "error_pattern")
    }
    lines = [f"# {title}", "", f"- type: {LESSON_TYPE}"]
    if tag_list:
        lines.append(f"- tags: [{', '.join(tag_list)}]")
    lines += [f"- {k}: {v}" for k, v in facets.items() if v]
    lines += [f"- updated_at_utc: {now_instant()}", "", body.strip()]
    if evidence:
        lines += ["", f"evidence: {evidence.strip()}"]
    doc_metadata = DocMetadata(
        atom_type=LESSON_TYPE, tags=tuple(dict.fromkeys(tag_list)), scope=ctx.scope, **facets
    )
    name = lesson_name(ctx.scope, facets["project_module"], facets["error_pattern"])
    text = "\n".join(lines) + "\n"
    return await _upsert(
        ctx, LESSON_SLOT, name, text, doc_metadata, "save_lesson", LessonResult, datasetSlot=LESSON_SLOT
    )


async def list_datasets(store: KnowledgeStore) -> ListDatasetsResult:
    """Every slot with its id and document count."""
    slots = await store.list_slots()
    return ListDatasetsResult(
        datasets=[
            DatasetInfo(
                id=s.id,
                name=s.name,
                description=s.description,
                documentCount=s.document_count,
                indexingTechnique=s.indexing_technique,
            )
            for s in slots
        ],
        declaredLocally=[SlotRef(name=s.name, configuredId=s.id) for s in slots],
    )


async def create_dataset(store: KnowledgeStore, name: str, description: str) -> CreateDatasetResult:
    """Create a slot; an existing one is returned unchanged."""
    slot, created = await store.create_slot(name, description)
    fields = [MetadataField(name=f, ok=True) for f in METADATA_FIELDS]
    return CreateDatasetResult(
        ok=True,
        created=created,
        dataset=DatasetRef(id=slot.id, name=slot.name, description=slot.description),
        metadataSchema=MetadataSchema(installed=fields, failed=[], complete=True),
    )


async def set_document_status(
    store: KnowledgeStore, dataset: str, document_id: str, action: Literal["delete", "disable", "enable"]
) -> DocumentStatusResult:
    """Delete, disable or enable one document of a slot (given by name or id)."""
    slot = await resolve_slot(store, dataset)
    if action == "delete":
        done = await store.delete(slot, document_id)
    else:
        done = await store.set_enabled(slot, document_id, action == "enable")
    if not done:
        raise NotFound(f"document {document_id} not found in slot {slot}")
    # a change Dify could not take yet (down, or still indexing the document) waits in the outbox
    waiting = None
    durable = unversioned(store)
    if isinstance(durable, DurableKnowledgeStore):
        waiting = await durable.waiting_change(slot, document_id)
    return DocumentStatusResult(
        ok=True,
        datasetId=await slot_id(store, slot),
        slot=slot,
        documentId=document_id,
        result=_DONE[action],
        queued=waiting is not None,
        reason=waiting,
    )


async def supersede(
    ctx: KnowledgeContext, slot: str, document_id: str, action: Literal["disable", "delete"]
) -> Supersession:
    if action == "delete":
        done = await ctx.store.delete(slot, document_id)
    else:
        done = await ctx.store.set_enabled(slot, document_id, False)
    if not done:
        raise NotFound(f"document {document_id} not found in slot {slot}")
    return Supersession(documentId=document_id, action=action, result="ok")


async def write_memory(
    ctx: KnowledgeContext,
    *,
    name: str,
    text: str,
    dataset: str,
    supersedes: str | None,
    action: Literal["disable", "delete"],
    require_supersedes: bool,
) -> WriteResult:
    """Write a document; with `supersedes`, retire an older one in the same slot.

    The superseded document is checked first, so a wrong id fails before anything is
    written (memory-mcp's seed left a duplicate behind in that case)."""
    slot = await resolve_slot(ctx.store, dataset)
    if supersedes is not None and await ctx.store.get(slot, supersedes) is None:
        raise NotFound(f"document {supersedes} (to supersede) not found in slot {slot}")
    if require_supersedes and supersedes is None:
        raise InvalidInput("supersedes", "is required")
    result = await _upsert(ctx, slot, name, text, DocMetadata(scope=ctx.scope), "write_memory", WriteResult)
    if supersedes is not None and supersedes != result.documentId:
        result.supersedes = await supersede(ctx, slot, supersedes, action)
    return result
