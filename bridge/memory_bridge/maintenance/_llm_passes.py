"""The maintenance passes that ask an LLM, on this project's documents of each refine slot.

Local Dify MCP Memory's consolidate (its spec, section 11.2); the LLM is the caller's, behind
the small `Judge` protocol (memctl asks its capture provider), so core knows no provider:

- **dedupe-by-similarity** (no LLM): the near-duplicate pairs below, each listed as
  `flagged` with its keeper and score; nothing is written (the seed flags them when its LLM
  is off), so a person or llm-merge-near-duplicates decides.
- **llm-merge-near-duplicates**: each enabled document's nearest neighbours of the same type
  (cosine >= `similarity_threshold`, at most `cluster_top_k`: from the stored vectors on
  the embedded store, else the store's dense search with its text) form pairs; the keeper
  is the newer (created last; then the smaller id). The judge merges a pair (the keeper's
  text becomes the merged text, marked `consolidated_at`; the loser is archived: marked
  `superseded_by` and `consolidated_at`, disabled) or keeps both. A document takes part in one merge per run.
- **llm-semantic-refresh**: stale documents (consolidate_memory's rule), recalled last
  first, at most `refresh_max_per_run` per slot, each with its nearest neighbours: the judge keeps it
  (current again: `stale` unset and `last_refreshed_at`; unsure: still `stale`), rewrites it
  (new text, `last_refreshed_at`, `consolidated_at`, `stale` unset) or archives it (`stale`,
  `consolidated_at`, disabled). An answer the judge cannot use keeps the document stale.

Every change goes through the same record as the other passes (`undo_changes` writes it
back). The LLM's texts are redacted before they are written, like every other write to
memory. A dry run asks nothing: it lists what would be asked (`asked`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .._errors import MemctlError
from ..core._redact import redact
from ..stores._knowledge import Document, KnowledgeFilter, KnowledgeStore, SimilarDocuments
from ._consolidate import is_stale, refine_slots
from ._passes import Actions, PassReport, SlotSkipped, _instant, _Run, each_refine_slot

__all__ = [
    "LLM_PASSES",
    "SIMILARITY_PASS",
    "Judge",
    "MergeVerdict",
    "NearDuplicates",
    "RefreshVerdict",
    "flag_similar",
    "run_llm_passes",
]

LLM_PASSES = ("llm-merge-near-duplicates", "llm-semantic-refresh")
SIMILARITY_PASS = "dedupe-by-similarity"
QUERY_CHARS = 1000  # of a document's text, the query that finds its neighbours
CONTEXT_CHARS = 600  # of a neighbour's best passage, shown to the judge


class _NoVectors(SlotSkipped):
    """The store searches this slot by keywords only: no similarity to find near-duplicates by."""


@dataclass(frozen=True)
class MergeVerdict:
    """Merge the pair into `text` (the keeper's new text), or keep both as they are."""

    merge: bool
    text: str = ""
    reason: str = ""


@dataclass(frozen=True)
class RefreshVerdict:
    """What becomes of a stale document; `stale`: a kept one stays flagged (unsure)."""

    action: Literal["keep", "rewrite", "archive"]
    text: str = ""
    stale: bool = True
    reason: str = ""


class Judge(Protocol):
    """The LLM's decisions; an unusable answer is a keep verdict saying so in `reason`.
    A judge that cannot answer at all (no provider) raises a MemctlError: the pass stops."""

    async def merge(
        self, keeper: Mapping[str, Any], loser: Mapping[str, Any], score: float
    ) -> MergeVerdict: ...

    async def refresh(
        self, document: Mapping[str, Any], neighbours: Sequence[Mapping[str, Any]]
    ) -> RefreshVerdict: ...


@dataclass(frozen=True)
class NearDuplicates:
    """How near-duplicates and neighbours are found, and how many stale documents a run asks about."""

    similarity_threshold: float = 0.92
    cluster_top_k: int = 5
    refresh_max_per_run: int = 25


def _view(doc: Document) -> dict[str, Any]:
    """A document as the judge sees it."""
    recalled = doc.last_recalled_at
    return {
        "documentId": doc.id,
        "name": doc.name,
        "created_at": _instant(doc.created_at),
        "last_recalled_at": _instant(recalled) if recalled else "never",
        "metadata": doc.metadata.to_dict(),
        "text": doc.text,
    }


async def _neighbours(
    store: KnowledgeStore, doc: Document, scope: str, top_k: int, threshold: float | None
) -> list[tuple[float, str, str]]:
    """(cosine, id, best passage) of the enabled documents of `doc`'s slot, scope and type
    nearest to its text, itself left out. With a `threshold`, a store searching by keywords
    only (no embedding model, a Dify economy dataset) raises _NoVectors: its scores are no
    similarity."""
    flt = KnowledgeFilter(scope=scope, atom_type=doc.metadata.atom_type or None)
    page = await store.search(
        [doc.slot], doc.text[:QUERY_CHARS], flt, top_k=top_k + 1, score_threshold=threshold, mode="dense"
    )
    if threshold is not None and page.degraded and "keyword search only" in page.degraded:
        raise _NoVectors(f"{doc.slot}: near-duplicates are found by vectors, and {page.degraded}")
    return [(h.score, h.document_id, h.content) for h in page.hits if h.document_id != doc.id][:top_k]


async def _alike(
    store: KnowledgeStore, active: dict[str, Document], scope: str, options: NearDuplicates
) -> list[tuple[float, Document, Document]]:
    """Pairs of active documents at least `similarity_threshold` alike: from the store's
    vectors where it has them (the embedded store), else by searching with each text."""
    if not active:
        return []
    slot = next(iter(active.values())).slot
    threshold, top_k = options.similarity_threshold, options.cluster_top_k
    if isinstance(store, SimilarDocuments):
        found = await store.similar_documents(
            slot, KnowledgeFilter(scope=scope), threshold=threshold, top_k=top_k
        )
        if found is None:
            raise _NoVectors(
                f"{slot}: near-duplicates are found by vectors, and the store has no embedding model"
            )
        return [(s, active[a], active[b]) for a, b, s in found if a in active and b in active]
    pairs = []
    for doc in sorted(active.values(), key=lambda d: d.id):
        near = await _neighbours(store, doc, scope, top_k, threshold)
        pairs += [(score, doc, active[other]) for score, other, _ in near if other in active]
    return pairs


async def _pairs(
    store: KnowledgeStore, docs: list[Document], scope: str, options: NearDuplicates
) -> list[tuple[float, Document, Document]]:
    """(score, keeper, loser) of the enabled near-duplicates of one type, most alike first."""
    active = {d.id: d for d in docs if d.enabled}
    pairs: dict[frozenset[str], tuple[float, Document, Document]] = {}
    for score, doc, other in await _alike(store, active, scope, options):
        if doc.metadata.atom_type != other.metadata.atom_type or frozenset((doc.id, other.id)) in pairs:
            continue
        keeper, loser = sorted((doc, other), key=lambda d: (-d.created_at, d.id))
        pairs[frozenset((doc.id, other.id))] = (score, keeper, loser)
    return sorted(pairs.values(), key=lambda p: (-p[0], p[2].id))


def _pair_action(score: float, keeper: Document, loser: Document) -> dict[str, Any]:
    return {
        "documentId": loser.id,
        "name": loser.name,
        "keeper": keeper.id,
        "keeperName": keeper.name,
        "score": round(score, 4),
    }


async def _merge(
    run: _Run,
    judge: Judge,
    scope: str,
    docs: list[Document],
    options: NearDuplicates,
    actions: list[dict[str, Any]],
) -> None:
    merged: set[str] = set()
    for score, keeper, loser in await _pairs(run.store, docs, scope, options):
        action = _pair_action(score, keeper, loser)
        if run.dry_run:
            actions.append({"action": "asked", **action})
            continue
        if keeper.id in merged or loser.id in merged:
            continue
        verdict = await judge.merge(_view(keeper), _view(loser), score)
        if verdict.merge:
            at = _instant(run.now)
            await run.change(keeper, {"consolidated_at": at}, text=redact(verdict.text))
            await run.change(loser, {"superseded_by": keeper.id, "consolidated_at": at}, enabled=False)
            merged |= {keeper.id, loser.id}
        actions.append({"action": "merged" if verdict.merge else "kept", **action, "reason": verdict.reason})


async def _refresh(
    run: _Run,
    judge: Judge,
    scope: str,
    docs: list[Document],
    options: NearDuplicates,
    stale_after_months: float,
    actions: list[dict[str, Any]],
) -> None:
    found = [d for d in docs if d.enabled and is_stale(d, run.now, stale_after_months)]
    found.sort(key=lambda d: (-(d.last_recalled_at or 0.0), d.id))
    for doc in found[: options.refresh_max_per_run]:
        action = {"documentId": doc.id, "name": doc.name}
        if run.dry_run:
            actions.append({"action": "asked", **action})
            continue
        near = await _neighbours(run.store, doc, scope, options.cluster_top_k, None)
        neighbours = [
            {"documentId": i, "score": round(s, 4), "content": c[:CONTEXT_CHARS]} for s, i, c in near
        ]
        verdict = await judge.refresh(_view(doc), neighbours)
        at = _instant(run.now)
        if verdict.action == "rewrite":
            marks = {"stale": "", "last_refreshed_at": at, "consolidated_at": at}
            await run.change(doc, marks, text=redact(verdict.text))
            done = "rewritten"
        elif verdict.action == "archive":
            await run.change(doc, {"stale": "true", "consolidated_at": at}, enabled=False)
            done = "archived"
        elif verdict.stale:
            if doc.marks.get("stale") != "true":
                await run.change(doc, {"stale": "true"})
            done = "kept"
        else:
            await run.change(doc, {"stale": "", "last_refreshed_at": at})
            done = "kept"
        actions.append({"action": done, **action, "stale": verdict.stale, "reason": verdict.reason})


async def run_llm_passes(
    store: KnowledgeStore,
    passes: Sequence[str],
    judge: Judge,
    *,
    scope: str,
    policies: Mapping[str, str],
    stale_after_months: float,
    options: NearDuplicates,
    now: float | None = None,
    dry_run: bool,
    changes: list[dict[str, Any]],
) -> list[PassReport]:
    """Run `passes` (of LLM_PASSES, in their order) on every refine slot with `judge`; a
    report per pass. Unless `dry_run`, each document's state before it changes is appended
    to `changes` first. A judge that fails (MemctlError) stops its pass: an error of it."""
    _, refine, refusals = await refine_slots(store, None, policies)
    run = _Run(store, dry_run, time.time() if now is None else now, changes)
    reports = []
    for name in [p for p in LLM_PASSES if p in passes]:

        async def work(slot: str, docs: list[Document], actions: Actions, name: str = name) -> None:
            if name == "llm-merge-near-duplicates":
                await _merge(run, judge, scope, docs, options, actions)
            else:
                await _refresh(run, judge, scope, docs, options, stale_after_months, actions)

        reports.append(report := PassReport(name))
        # a store or the LLM failed: the slot stops there
        await each_refine_slot(store, (refine, refusals), report, scope, work, failures=(MemctlError,))
    return reports


async def flag_similar(
    store: KnowledgeStore,
    *,
    scope: str,
    policies: Mapping[str, str],
    options: NearDuplicates,
) -> PassReport:
    """dedupe-by-similarity on every refine slot: its near-duplicate pairs, flagged (listed,
    nothing written)."""
    report = PassReport(SIMILARITY_PASS)

    async def work(slot: str, docs: list[Document], actions: Actions) -> None:
        pairs = await _pairs(store, docs, scope, options)
        actions += [{"action": "flagged", **_pair_action(*pair)} for pair in pairs]

    _, refine, refusals = await refine_slots(store, None, policies)
    await each_refine_slot(store, (refine, refusals), report, scope, work, failures=(MemctlError,))
    return report
