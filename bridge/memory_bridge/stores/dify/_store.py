"""Knowledge memory on Dify: each slot is a Dify dataset, each document a Dify document.

- A slot is bound to a dataset id by configuration (`DIFY_DATASET_<NAME>_ID`), or found
  by its name (`<dataset_prefix><slot>`); `create_slot` creates it and installs the
  metadata schema, idempotently.
- Upsert by name updates the document in place (update-by-text), never
  create-list-delete; metadata writes send only memctl's own fields, by id, merged
  into the document's set (`partial_update`), so Dify's built-in fields and fields
  someone added in Dify are never echoed back.
- Tags are stored as `,a,b,` so Dify's `contains` operator matches a whole tag
  (`,api,` never matches `rapid-api`).
- `high_quality` datasets are searched hybrid (0.7 vector + 0.3 keyword, Dify's
  weighted score); `economy` ones by keyword only (scores 0), and say so. Economy
  keywords are case-sensitive and capped at 10 per passage in Dify, so memctl sets each
  passage's keywords itself (every word, lowercased) once Dify has indexed it, and
  lowercases queries.
- Scores are calibrated relevance as in the embedded store (`stores._relevance`): Dify's
  own score and the query-term coverage of the passage (`dify` model), coverage alone
  on economy datasets (`keyword` model); thresholds apply to that score, here, never in
  Dify.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

import anyio
import httpx

from ..._errors import (
    InvalidInput,
    MetadataPending,
    NotFound,
    StoreError,
    StoreFailed,
    StoreUnavailable,
)
from .._clock import format_instant
from .._knowledge import (
    MARK_FIELDS,
    METADATA_FIELDS,
    DocMetadata,
    Document,
    KnowledgeFilter,
    SearchHit,
    SearchMode,
    SearchPage,
    SlotInfo,
    UpsertOutcome,
)
from .._relevance import Evidence, RelevanceModel, calibration, coverage
from ._client import STALE_FLAG_SECONDS, DifyClient

__all__ = ["DifyKnowledgeStore"]

log = logging.getLogger("memctl.dify")

_RECALL_FIELDS = ("last_recalled_at", "recall_count")
_OWN_FIELDS = (*METADATA_FIELDS, "memctl_origin", "memctl_sha", *_RECALL_FIELDS, *MARK_FIELDS)
_SCALAR = ("atom_type", "project_module", "language", "task_type", "error_pattern", "scope")
_WAIT_SECONDS = 30.0
_NOT_AVAILABLE = "Document is not available"  # Dify refuses to update a document it is (re-)indexing
_STATUS_PATIENCE = 3.0  # a status change refused while Dify re-indexes, retried this long
_SUBSTRING_CANDIDATES = 200
_CANDIDATES = 50
_Keying = Literal["ready", "wait", "gone"]
# Dify's 400 for a segment that a concurrent update of its document disabled while re-indexing.
_SEGMENT_REPLACED = "Can't update disabled segment"


@dataclass
class _Dataset:
    slot: str
    id: str
    technique: str
    embedding_model: str | None
    embedding_provider: str | None
    description: str = ""


def _keywords(content: str, extracted: list[str]) -> list[str]:
    """Every word of a passage, lowercased, plus Dify's own keywords lowercased: economy
    datasets index only these (Dify's extraction keeps case and at most 10 words)."""
    lowered = content.lower()
    words = {*re.findall(r"\w+", lowered), *re.findall(r"[a-z0-9]+", lowered)}
    words.update(k.lower() for k in extracted)
    return sorted(w for w in words if len(w) > 1)


def _sha(text: str, metadata: DocMetadata) -> str:
    return hashlib.sha256(json.dumps([text, metadata.to_dict()], sort_keys=True).encode()).hexdigest()


def _encode(metadata: DocMetadata, origin: str, sha: str) -> dict[str, str]:
    values = {name: str(getattr(metadata, name)) for name in _SCALAR}
    values["tags"] = "," + ",".join(metadata.tags) + "," if metadata.tags else ""
    values["memctl_origin"] = origin
    values["memctl_sha"] = sha
    return values


def _decode(raw: dict[str, Any] | list[Any] | None) -> dict[str, str]:
    """Dify gives metadata as a dict (retrieve) or a list of {name, value} (document views)."""
    if raw is None:
        return {}
    if isinstance(raw, list):
        return {
            str(item.get("name")): "" if item.get("value") is None else str(item.get("value")) for item in raw
        }
    return {str(k): "" if v is None else str(v) for k, v in raw.items()}


def _metadata(values: dict[str, str]) -> DocMetadata:
    tags = tuple(t for t in values.get("tags", "").split(",") if t)
    return DocMetadata(tags=tags, **{name: values.get(name, "") for name in _SCALAR})


def _recall(values: dict[str, str]) -> tuple[float | None, int]:
    """The recall stamps of a document's metadata (absent or unreadable: never recalled)."""
    try:
        last = datetime.fromisoformat(values["last_recalled_at"].replace("Z", "+00:00")).timestamp()
    except (KeyError, ValueError):
        last = None
    count = values.get("recall_count", "")
    return last, int(count) if count.isdigit() else 0


def _conditions(flt: KnowledgeFilter) -> dict[str, Any] | None:
    conditions: list[dict[str, Any]] = [
        {"name": name, "comparison_operator": "is", "value": getattr(flt, name)}
        for name in _SCALAR
        if getattr(flt, name) is not None
    ]
    conditions += [
        {"name": "tags", "comparison_operator": "contains", "value": f",{tag},"} for tag in flt.tags
    ]
    return {"logical_operator": "and", "conditions": conditions} if conditions else None


class DifyKnowledgeStore:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        bindings: dict[str, str] | None = None,
        default_slots: tuple[str, ...] | list[str] = (),
        dataset_prefix: str = "",
        technique: str = "high_quality",
        wait_indexed: bool = False,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.client = DifyClient(base_url, api_key, transport=transport)
        self.url = f"dify+{base_url}"
        self._bindings = dict(bindings or {})
        self._default_slots = tuple(default_slots)
        self._prefix = dataset_prefix
        self._technique = technique
        self._wait_indexed = wait_indexed
        self._datasets: dict[str, _Dataset] = {}
        self._fields: dict[str, dict[str, str]] = {}
        # economy documents whose keywords await indexing: id -> (dataset, re-enabled)
        self._unkeyed: dict[str, tuple[_Dataset, bool]] = {}
        self.degraded: str | None = None

    # -- slots ------------------------------------------------------------------------------

    def _remember(self, slot: str, body: dict[str, Any]) -> _Dataset:
        dataset = _Dataset(
            slot=slot,
            id=str(body["id"]),
            technique=str(body.get("indexing_technique") or self._technique),
            embedding_model=body.get("embedding_model"),
            embedding_provider=body.get("embedding_model_provider"),
            description=str(body.get("description") or ""),
        )
        self._datasets[slot] = dataset
        return dataset

    async def _lookup(self, slot: str) -> _Dataset | None:
        if slot in self._datasets:
            return self._datasets[slot]
        if slot in self._bindings:
            return self._remember(slot, await self.client.get_dataset(self._bindings[slot]))
        for known, dataset in self._datasets.items():
            if dataset.id == slot:
                return self._datasets[known]
        found = await self.client.find_dataset(self._prefix + slot)
        return None if found is None else self._remember(slot, found)

    async def _dataset(self, slot: str) -> _Dataset:
        dataset = await self._lookup(slot)
        if dataset is None and slot in self._default_slots:  # created on first use
            await self.create_slot(slot)
            dataset = self._datasets[slot]
        if dataset is None:
            known = ", ".join(s.name for s in await self.list_slots())
            raise InvalidInput("dataset", f"unknown slot {slot!r} (known: {known})")
        return dataset

    async def slot_ids(self) -> dict[str, str]:
        return {slot.name: slot.id for slot in await self.list_slots()}

    async def list_slots(self) -> list[SlotInfo]:
        names = dict.fromkeys([*self._default_slots, *self._bindings, *self._datasets])
        slots = []
        for name in names:
            dataset = await self._lookup(name)
            if dataset is None and name in self._default_slots:  # created on first use
                await self.create_slot(name)
                dataset = self._datasets[name]
            if dataset is None:
                continue
            body = await self.client.get_dataset(dataset.id)
            slots.append(
                SlotInfo(
                    name,
                    dataset.id,
                    dataset.description,
                    int(body.get("document_count") or 0),
                    dataset.technique,
                )
            )
        return slots

    async def create_slot(self, name: str, description: str = "") -> tuple[SlotInfo, bool]:
        existing = await self._lookup(name)
        created = existing is None
        dataset = existing or self._remember(
            name, await self.client.create_dataset(self._prefix + name, description, self._technique)
        )
        await self._install_schema(dataset)
        return SlotInfo(name, dataset.id, dataset.description, 0, dataset.technique), created

    async def _install_schema(self, dataset: _Dataset) -> dict[str, str]:
        """The metadata fields memctl writes; missing ones are created (idempotent)."""
        if dataset.id in self._fields:
            return self._fields[dataset.id]
        fields = await self.client.metadata_fields(dataset.id)
        for name in _OWN_FIELDS:
            if name not in fields:
                fields[name] = await self.client.create_metadata_field(dataset.id, name)
        self._fields[dataset.id] = fields
        return fields

    async def missing_metadata_fields(self) -> dict[str, list[str]]:
        """Slots whose dataset lacks some of the metadata fields memctl writes, and which."""
        missing: dict[str, list[str]] = {}
        for slot in await self.list_slots():
            fields = await self.client.metadata_fields(slot.id)
            absent = [name for name in _OWN_FIELDS if name not in fields]
            if absent:
                missing[slot.name] = absent
        return missing

    async def install_metadata_fields(self, slot: str) -> None:
        """Create the fields a slot's dataset lacks (idempotent)."""
        dataset = await self._dataset(slot)
        self._fields.pop(dataset.id, None)
        await self._install_schema(dataset)

    # -- documents --------------------------------------------------------------------------

    async def _wait_until(
        self, dataset: _Dataset, document_id: str, statuses: tuple[str, ...]
    ) -> dict[str, Any]:
        deadline = time.monotonic() + _WAIT_SECONDS
        while True:
            doc = await self.client.get_document(dataset.id, document_id)
            if doc.get("indexing_status") in statuses or doc.get("display_status") in statuses:
                return doc
            if doc.get("indexing_status") == "error" or time.monotonic() > deadline:
                raise InvalidInput(
                    "document", f"{document_id} did not become {'/'.join(statuses)}: {doc.get('error')}"
                )
            await anyio.sleep(0.2)

    async def _segments_enabled(self, dataset: _Dataset, document_id: str) -> list[bool]:
        return [bool(s.get("enabled", False)) for s in await self.client.segments(dataset.id, document_id)]

    async def _wait_segments(self, dataset: _Dataset, document_id: str, *, enabled: bool) -> None:
        """Until Dify's index task after a status change is over, at most _WAIT_SECONDS: it
        switches every segment of the document last (a disabled one is then skipped by
        retrieval, an enabled one has Dify's keywords again). After that searches may still
        differ for a while, which is all a status change without waiting promises anyway."""
        deadline = time.monotonic() + _WAIT_SECONDS
        while any(state != enabled for state in await self._segments_enabled(dataset, document_id)):
            if time.monotonic() > deadline:
                return
            await anyio.sleep(0.2)

    async def _update_when_available(
        self, dataset: _Dataset, document_id: str, name: str, text: str
    ) -> dict[str, Any]:
        """Replace a document's text once Dify has it available. Another writer may re-index
        it between our wait and our request (Dify then refuses: "Document is not available"):
        wait again, until _WAIT_SECONDS have passed."""
        deadline = time.monotonic() + _WAIT_SECONDS
        while True:
            await self._wait_until(dataset, document_id, ("available", "completed"))
            try:
                return await self.client.update_by_text(dataset.id, document_id, name, text)
            except InvalidInput as exc:
                if _NOT_AVAILABLE not in str(exc) or time.monotonic() > deadline:
                    raise

    async def upsert(
        self, slot: str, name: str, text: str, metadata: DocMetadata, *, origin: str
    ) -> UpsertOutcome:
        dataset = await self._dataset(slot)
        fields = await self._install_schema(dataset)
        digest = _sha(text, metadata)
        existing = await self.client.find_document(dataset.id, name)
        if existing is not None:
            if _decode(existing.get("doc_metadata")).get("memctl_sha") == digest:
                return UpsertOutcome(
                    str(existing["id"]),
                    created=False,
                    changed=False,
                    indexing_status=str(existing.get("indexing_status") or "completed"),
                )
            result = await self._update_when_available(dataset, str(existing["id"]), name, text)
        else:
            result = await self.client.create_by_text(dataset.id, name, text, dataset.technique)
        document = result["document"]
        created = existing is None
        try:
            await self._write_metadata(
                dataset, fields, str(document["id"]), _encode(metadata, origin, digest)
            )
        except StoreError as exc:
            raise MetadataPending(str(document["id"]), created, exc) from exc
        status = str(document.get("indexing_status") or "waiting")
        if self._wait_indexed:
            status = str(
                (await self._wait_until(dataset, str(document["id"]), ("completed",)))["indexing_status"]
            )
        await self._after_indexing(dataset, str(document["id"]))
        return UpsertOutcome(str(document["id"]), created=created, changed=True, indexing_status=status)

    async def _after_indexing(self, dataset: _Dataset, document_id: str, *, enabled: bool = False) -> None:
        """Economy datasets: set the keywords once Dify has indexed the document: now when
        saves wait or it is done already, else in `upkeep`. After an enable, Dify's
        re-index (not shown in the document's status) would replace them, so it is awaited."""
        if dataset.technique != "economy":
            return
        if self._wait_indexed:
            await self._wait_until(dataset, document_id, ("completed",))
        elif enabled or await self._keying(dataset, document_id, enabled=False) != "ready":
            self._unkeyed[document_id] = (dataset, enabled)
            return
        await self._set_keywords(dataset, document_id)

    async def _keying(self, dataset: _Dataset, document_id: str, *, enabled: bool) -> _Keying:
        """ "ready" for its keywords, "wait" while Dify indexes it, "gone" (deleted or disabled)."""
        try:
            doc = await self.client.get_document(dataset.id, document_id)
        except NotFound:
            return "gone"
        if not doc.get("enabled", True):
            return "gone"  # enabling it again sets its keywords
        if doc.get("indexing_status") != "completed":
            return "wait"
        if enabled and not all(await self._segments_enabled(dataset, document_id)):
            return "wait"  # the enable's re-index (it enables the segments last) is not over
        return "ready"

    async def _set_keywords(self, dataset: _Dataset, document_id: str) -> None:
        for segment in await self.client.segments(dataset.id, document_id):
            current = [str(k) for k in segment.get("keywords") or []]
            wanted = _keywords(str(segment.get("content") or ""), current)
            if sorted(current) == wanted:
                continue
            try:
                await self.client.set_segment_keywords(dataset.id, document_id, segment, wanted)
            except (InvalidInput, NotFound, StoreFailed) as exc:
                if not await self._replaced_meanwhile(dataset, document_id, str(segment["id"]), exc):
                    raise
                # a concurrent save of this document is re-indexing it (the segment is
                # disabled, or already replaced): key it once that is over
                self._unkeyed[document_id] = (dataset, False)
                return

    async def _replaced_meanwhile(
        self, dataset: _Dataset, document_id: str, segment_id: str, refusal: StoreError
    ) -> bool:
        """Whether a refused keyword write met another save re-indexing the document. Dify
        says so with a 400 for the segment it disabled or a 404 for one it replaced; 1.14.2
        sometimes with a 500, which counts only if the document is indeed no longer ready
        or the segment gone or disabled (any other 500 is a real failure)."""
        if isinstance(refusal, NotFound):
            return True
        if isinstance(refusal, InvalidInput):
            return _SEGMENT_REPLACED in str(refusal)
        if await self._keying(dataset, document_id, enabled=False) != "ready":
            return True
        segments = await self.client.segments(dataset.id, document_id)
        return not any(str(s.get("id")) == segment_id and s.get("enabled", True) for s in segments)

    async def _write_metadata(
        self, dataset: _Dataset, fields: dict[str, str], document_id: str, values: dict[str, str]
    ) -> None:
        """Only memctl's own fields, by the ids of the dataset's field map, merged into the
        document's set (`partial_update`): built-in and foreign fields are never sent back."""
        if any(key not in fields for key in values):  # a field deleted in Dify since we looked
            self._fields.pop(dataset.id, None)
            fields = await self._install_schema(dataset)
        await self.client.set_metadata(
            dataset.id,
            document_id,
            [{"id": fields[key], "name": key, "value": value} for key, value in values.items()],
        )

    async def _document(self, dataset: _Dataset, body: dict[str, Any]) -> Document:
        segments = await self.client.segments(dataset.id, str(body["id"]))
        values = _decode(body.get("doc_metadata"))
        created = float(body.get("created_at") or 0)
        last_recalled_at, recall_count = _recall(values)
        return Document(
            id=str(body["id"]),
            slot=dataset.slot,
            name=str(body["name"]),
            text="\n\n".join(str(s.get("content") or "") for s in segments),
            enabled=bool(body.get("enabled", True)),
            created_at=created,
            updated_at=float(body.get("updated_at") or created),
            metadata=_metadata(values),
            origin=values.get("memctl_origin", ""),
            last_recalled_at=last_recalled_at,
            recall_count=recall_count,
            marks={name: values[name] for name in MARK_FIELDS if values.get(name)},
            settled=str(body.get("indexing_status") or "completed") == "completed",
        )

    async def get(self, slot: str, document_id: str) -> Document | None:
        dataset = await self._dataset(slot)
        try:
            return await self._document(dataset, await self.client.get_document(dataset.id, document_id))
        except NotFound:
            return None

    async def find(self, slot: str, name: str) -> Document | None:
        dataset = await self._dataset(slot)
        found = await self.client.find_document(dataset.id, name)
        return None if found is None else await self._document(dataset, found)

    async def list_documents(self, slot: str, *, offset: int, limit: int) -> tuple[list[Document], int]:
        dataset = await self._dataset(slot)
        bodies = [d async for d in self.client.pages(f"/datasets/{dataset.id}/documents", "list documents")]
        bodies.sort(key=lambda d: (float(d.get("created_at") or 0), int(d.get("position") or 0)))
        page = [await self._document(dataset, body) for body in bodies[offset : offset + limit]]
        return page, len(bodies)

    async def set_enabled(self, slot: str, document_id: str, enabled: bool) -> bool:
        dataset = await self._dataset(slot)
        try:  # Dify skips unknown ids silently, so look first
            await self._wait_until(dataset, document_id, ("completed",))
        except NotFound:
            return False
        action = "enable" if enabled else "disable"
        # Dify refuses a status change while its "being indexed" flag is set, and the flag
        # can outlive the re-index by ten minutes: saves that wait, wait that out; otherwise
        # the refusal is a Conflict after a few seconds (the outbox waits for it instead).
        patience = STALE_FLAG_SECONDS if self._wait_indexed else _STATUS_PATIENCE
        await self.client.set_status(dataset.id, document_id, action, patience=patience)
        if self._wait_indexed:
            await self._wait_segments(dataset, document_id, enabled=enabled)
        if enabled:  # re-indexing extracts Dify's own keywords again
            await self._after_indexing(dataset, document_id, enabled=True)
        return True

    async def delete(self, slot: str, document_id: str) -> bool:
        dataset = await self._dataset(slot)
        try:
            await self.client.delete_document(dataset.id, document_id)
        except NotFound:
            return False
        return True

    async def stamp_recalls(
        self, slot: str, document_ids: Sequence[str], *, now: float, window: float
    ) -> int:
        """One metadata write for the batch, of the two recall fields only (merged into each
        document's set); the current count is read from each document first. A dataset
        without the fields (bound to one memctl did not create) is left alone."""
        dataset = await self._dataset(slot)
        fields = self._fields.get(dataset.id) or await self.client.metadata_fields(dataset.id)
        if any(name not in fields for name in _RECALL_FIELDS):
            return 0
        operations = []
        for document_id in sorted(set(document_ids)):
            try:
                body = await self.client.get_document(dataset.id, document_id)
            except NotFound:
                continue
            last, count = _recall(_decode(body.get("doc_metadata")))
            if last is not None and last > now - window:
                continue
            values = {"last_recalled_at": format_instant(now), "recall_count": str(count + 1)}
            operations.append(
                (document_id, [{"id": fields[k], "name": k, "value": v} for k, v in values.items()])
            )
        if operations:
            await self.client.set_metadata_many(dataset.id, operations)
        return len(operations)

    async def set_recalls(
        self, slot: str, document_id: str, *, last_recalled_at: float | None, recall_count: int
    ) -> bool:
        """The two recall fields only."""
        last = "" if last_recalled_at is None else format_instant(last_recalled_at)
        return await self._set_own_fields(
            slot, document_id, {"last_recalled_at": last, "recall_count": str(recall_count)}
        )

    async def set_marks(self, slot: str, document_id: str, marks: Mapping[str, str]) -> bool:
        """Only the marks given, merged into the document's metadata."""
        return await self._set_own_fields(slot, document_id, dict(marks))

    async def _set_own_fields(self, slot: str, document_id: str, values: dict[str, str]) -> bool:
        """Write some of memctl's own fields of one document (installing the fields on a
        dataset that lacks them); False if there is no such document."""
        dataset = await self._dataset(slot)
        try:
            await self.client.get_document(dataset.id, document_id)
        except NotFound:
            return False
        fields = await self._install_schema(dataset)
        await self._write_metadata(dataset, fields, document_id, values)
        return True

    # -- search -----------------------------------------------------------------------------

    def _retrieval_model(
        self, dataset: _Dataset, mode: SearchMode, flt: KnowledgeFilter, top_k: int
    ) -> dict[str, Any]:
        """Dify's threshold stays off: thresholds apply to the calibrated score, here."""
        model: dict[str, Any] = {
            "reranking_enable": False,
            "top_k": top_k,
            "score_threshold_enabled": False,
            "score_threshold": 0.0,
        }
        if dataset.technique == "economy":
            model["search_method"] = "keyword_search"
        elif mode == "hybrid":
            model.update(
                search_method="hybrid_search",
                reranking_mode="weighted_score",
                weights={
                    "weight_type": "customized",
                    "vector_setting": {
                        "vector_weight": 0.7,
                        "embedding_provider_name": dataset.embedding_provider,
                        "embedding_model_name": dataset.embedding_model,
                    },
                    "keyword_setting": {"keyword_weight": 0.3},
                },
            )
        else:
            model["search_method"] = "semantic_search" if mode == "dense" else "full_text_search"
        conditions = _conditions(flt)
        if conditions is not None:
            model["metadata_filtering_conditions"] = conditions
        return model

    @staticmethod
    def _calibrated(query: str, hits: list[SearchHit], model: RelevanceModel) -> list[SearchHit]:
        """The hits with Dify's score replaced by calibrated relevance (evidence kept)."""
        shares = coverage(query, [(hit.document_name, hit.content) for hit in hits])
        shipped = calibration()
        out = []
        for hit, share in zip(hits, shares, strict=True):
            evidence = Evidence(coverage=share, store_score=hit.score if model == "dify" else None)
            out.append(replace(hit, score=shipped.score(model, evidence), evidence=evidence))
        return out

    async def search(
        self,
        slots: list[str],
        query: str,
        flt: KnowledgeFilter,
        *,
        top_k: int,
        score_threshold: float | None,
        mode: SearchMode = "hybrid",
    ) -> SearchPage:
        datasets = [await self._dataset(slot) for slot in slots]
        best: dict[str, SearchHit] = {}
        degraded = None
        for dataset in datasets:
            if dataset.technique == "economy":
                degraded = f"slot {dataset.slot} is an economy Dify dataset: keyword search only"
            # more than top_k, so `total` can count matches beyond the page (Dify gives no total)
            fetch = max(top_k, _SUBSTRING_CANDIDATES if mode == "substring" else _CANDIDATES)
            search_mode: SearchMode = "keyword" if mode == "substring" else mode
            model = self._retrieval_model(dataset, search_mode, flt, fetch)
            sent = query.lower() if dataset.technique == "economy" else query  # keywords are lowercased
            records = await self.client.retrieve(dataset.id, sent[:250], model)
            hits = [self._hit(dataset, record) for record in records]
            if mode not in ("substring", "dense"):  # dense: a similarity search, Dify's cosines
                hits = self._calibrated(query, hits, "keyword" if dataset.technique == "economy" else "dify")
            for hit in hits:
                if mode == "substring" and query.lower() not in hit.content.lower():
                    continue
                if score_threshold is not None and hit.score < score_threshold:
                    continue
                if hit.document_id not in best or hit.score > best[hit.document_id].score:
                    best[hit.document_id] = hit
        hits = sorted(best.values(), key=lambda h: -h.score)
        return SearchPage(hits[:top_k], len(hits), degraded)

    @staticmethod
    def _hit(dataset: _Dataset, record: dict[str, Any]) -> SearchHit:
        segment = record["segment"]
        document = segment.get("document") or {}
        values = _decode(document.get("doc_metadata"))
        last_recalled_at, recall_count = _recall(values)
        return SearchHit(
            document_id=str(segment["document_id"]),
            document_name=str(document.get("name") or ""),
            slot=dataset.slot,
            score=round(float(record.get("score") or 0.0), 4),
            content=str(segment.get("content") or ""),
            position=int(segment.get("position") or 0),
            enabled=bool(segment.get("enabled", True)),
            metadata=_metadata(values),
            word_count=int(segment.get("word_count") or 0),
            origin=values.get("memctl_origin", ""),
            updated_at=float(segment.get("created_at") or 0),  # segments are made anew by each update
            last_recalled_at=last_recalled_at,
            recall_count=recall_count,
        )

    # -- upkeep -----------------------------------------------------------------------------

    async def count(self) -> int:
        return sum(slot.document_count for slot in await self.list_slots())

    async def upkeep(self) -> int:
        """Set the keywords of economy documents Dify has finished indexing since; stop at an
        outage (they stay queued for the next upkeep)."""
        done = 0
        for document_id, (dataset, enabled) in list(self._unkeyed.items()):
            try:
                state = await self._keying(dataset, document_id, enabled=enabled)
                if state == "wait":
                    continue
                del self._unkeyed[document_id]
                if state == "ready":
                    await self._set_keywords(dataset, document_id)  # queues it again if replaced meanwhile
                    done += 1
            except StoreUnavailable:
                self._unkeyed.setdefault(document_id, (dataset, enabled))
                break
        return done

    async def ping(self) -> None:
        await self.client.ping()

    async def close(self) -> None:
        """Set the keywords still waiting for Dify's indexing (a one-shot command saves and
        exits before any upkeep), then close the client."""
        for document_id, (dataset, enabled) in list(self._unkeyed.items()):
            try:
                await self._wait_until(dataset, document_id, ("completed",))
                if enabled:  # the enable's re-index would replace them
                    await self._wait_segments(dataset, document_id, enabled=True)
                await self._set_keywords(dataset, document_id)
            except StoreError as exc:
                log.warning("keywords of %s not set: %s", document_id, exc)
        self._unkeyed.clear()
        await self.client.close()
