"""Compile: merge the atoms of daily documents into knowledge and lessons, once a day.

For each enabled `daily-*` document of this project not compiled yet, every atom is
routed by type (lessons to self_improvement, the rest to knowledge) and checked
against candidates filtered by metadata:

1. a lesson whose scope and error_pattern match an existing lesson updates that
   lesson in place, with no LLM;
2. otherwise documents of the same type and scope at least `capture_similarity` alike
   by embedding (plus one of the same name) go to the LLM, which answers create,
   update (one of those candidates) or skip;
3. no candidate: the atom becomes a new document.

One failing atom is reported and the rest go on; a store outage stops the run (it
resumes next time). A daily whose atoms all landed is recorded in the state file and
disabled once `capture_daily_retention_days` old. `dry_run` asks no LLM, writes no
document and no state: it reports what would happen.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread

from memory_bridge import MemctlError, Settings, StoreUnavailable
from memory_bridge.core import KnowledgeContext, lesson_name, save_to_dataset, slugify
from memory_bridge.stores import Document, KnowledgeFilter

from .._errors import AnswerInvalid
from ._daily import parse_atoms
from ._flush import DAILY_SLOT
from ._llm import Provider, ask
from ._lock import FileLock, lock_owner
from ._outbox import deliver
from ._paths import CaptureDirs, atomic_write
from ._prompts import JUDGE
from ._schema import LESSON, Atom, CompileDecision
from ._store import knowledge

__all__ = ["AtomOutcome", "CompileReport", "compile_project", "route"]

MAX_ATTEMPTS = 3
_CANDIDATES = 5
_MAX_TOKENS = 800


def route(atom_type: str) -> str:
    return "self_improvement" if atom_type == LESSON else "knowledge"


@dataclass
class AtomOutcome:
    daily: str
    title: str
    type: str
    action: str  # create, update, skip, dropped, error; with dry_run: would-create, would-update, would-ask
    target: str = ""
    reason: str = ""


@dataclass
class CompileReport:
    dry_run: bool
    dailies: int = 0
    compiled: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    atoms: list[AtomOutcome] = field(default_factory=list)
    skipped: str | None = None  # why nothing ran (lock held)
    stopped: str | None = None  # why the run stopped early (the store is unreachable)
    degraded: str | None = None  # why near-duplicates could not be found by meaning

    @property
    def errors(self) -> int:
        return sum(o.action == "error" for o in self.atoms)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for outcome in self.atoms:
            counts[outcome.action] = counts.get(outcome.action, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.stopped is None and not self.errors,
            "dry_run": self.dry_run,
            "dailies": self.dailies,
            "compiled": self.compiled,
            "retired": self.retired,
            "counts": self.counts(),
            "atoms": [o.__dict__ for o in self.atoms],
            "skipped": self.skipped,
            "stopped": self.stopped,
            "degraded": self.degraded,
        }


def _today(now: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now))


def load_state(dirs: CaptureDirs) -> dict[str, Any]:
    try:
        state = json.loads(dirs.compile_state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = {}
    state = state if isinstance(state, dict) else {}
    state.setdefault("compiled", {})
    state.setdefault("attempts", {})
    return state


def _promoted_text(atom: Atom, *, title: str, body: str, now: float) -> str:
    meta = atom.metadata
    lines = [f"# {title}", "", f"- type: {atom.type}", f"- tags: [{', '.join(atom.tags)}]"]
    lines += [f"- {k}: {v}" for k, v in meta.model_dump().items() if v]
    lines += [f"- updated_at_utc: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now))}", "", body.strip()]
    if atom.evidence:
        lines += ["", f"evidence: {atom.evidence}"]
    return "\n".join(lines) + "\n"


def _metadata(atom: Atom) -> dict[str, Any]:
    return {"atom_type": atom.type, "tags": atom.tags, **atom.metadata.model_dump()}


async def _daily_documents(ctx: KnowledgeContext) -> list[Document]:
    docs: list[Document] = []
    offset = 0
    while True:
        page, total = await ctx.store.list_documents(DAILY_SLOT, offset=offset, limit=100)
        docs += page
        offset += len(page)
        if not page or offset >= total:
            break
    ours = [d for d in docs if d.name.startswith("daily-") and d.metadata.scope == ctx.scope and d.enabled]
    return sorted(ours, key=lambda d: d.name)


@dataclass
class _Compiler:
    settings: Settings
    ctx: KnowledgeContext
    provider: Provider | None
    report: CompileReport
    now: float

    @property
    def dry_run(self) -> bool:
        return self.report.dry_run

    async def _save(self, slot: str, name: str, atom: Atom, title: str, body: str) -> None:
        text = _promoted_text(atom, title=title, body=body, now=self.now)
        await save_to_dataset(self.ctx, dataset=slot, name=name, text=text, metadata=_metadata(atom))

    async def lesson(self, daily: str, atom: Atom) -> AtomOutcome:
        """Same scope and error_pattern: update that lesson in place (no LLM)."""
        slot, meta = route(atom.type), atom.metadata
        flt = KnowledgeFilter(atom_type=LESSON, error_pattern=meta.error_pattern, scope=self.ctx.scope)
        page = await self.ctx.store.search(
            [slot], f"{atom.title}\n{atom.body}", flt, top_k=1, score_threshold=None
        )
        name = lesson_name(self.ctx.scope, meta.project_module, meta.error_pattern)
        existing = page.hits[0].document_name if page.hits else None
        if existing is None and await self.ctx.store.find(slot, name) is not None:
            existing = name
        action = "update" if existing else "create"
        target = existing or name
        if self.dry_run:
            return AtomOutcome(daily, atom.title, atom.type, f"would-{action}", f"{slot}/{target}")
        await self._save(slot, target, atom, atom.title, atom.body)
        return AtomOutcome(daily, atom.title, atom.type, action, f"{slot}/{target}", "same error_pattern")

    async def _candidates(self, slot: str, name: str, atom: Atom) -> list[dict[str, Any]]:
        flt = KnowledgeFilter(atom_type=atom.type, scope=self.ctx.scope)
        page = await self.ctx.store.search(
            [slot],
            f"{atom.title}\n{atom.body}",
            flt,
            top_k=_CANDIDATES,
            score_threshold=self.settings.capture.similarity,
            mode="dense",
        )
        candidates = [
            {
                "documentId": h.document_id,
                "documentName": h.document_name,
                "score": h.score,
                "content": h.content[:800],
            }
            for h in ([] if page.degraded else page.hits)
        ]
        if page.degraded:
            self.report.degraded = page.degraded
        same = await self.ctx.store.find(slot, name)
        if same is not None and same.enabled and all(c["documentId"] != same.id for c in candidates):
            candidates.append(
                {"documentId": same.id, "documentName": same.name, "score": None, "content": same.text[:800]}
            )
        return candidates

    async def fact(self, daily: str, atom: Atom) -> AtomOutcome:
        """Near-duplicates by meaning go to the LLM; otherwise a new document."""
        slot = route(atom.type)
        name = f"knowledge-{slugify(atom.title)}.md"
        candidates = await self._candidates(slot, name, atom)
        if not candidates:
            if self.dry_run:
                return AtomOutcome(daily, atom.title, atom.type, "would-create", f"{slot}/{name}")
            await self._save(slot, name, atom, atom.title, atom.body)
            return AtomOutcome(daily, atom.title, atom.type, "create", f"{slot}/{name}", "no near-duplicate")
        names = ", ".join(c["documentName"] for c in candidates)
        if self.dry_run:
            return AtomOutcome(
                daily, atom.title, atom.type, "would-ask", f"{slot}/{names}", "near-duplicates"
            )
        return await self._judge(daily, atom, slot, name, candidates)

    async def _judge(
        self, daily: str, atom: Atom, slot: str, name: str, candidates: list[dict[str, Any]]
    ) -> AtomOutcome:
        provider = self.provider
        if provider is None:
            raise AnswerInvalid("no capture provider to judge near-duplicates")
        new = {
            "type": atom.type,
            "title": atom.title,
            "body": atom.body,
            "tags": atom.tags,
            "metadata": atom.metadata.model_dump(),
            "evidence": atom.evidence,
        }
        user = (
            f"NEW ATOM:\n{json.dumps(new, ensure_ascii=False)}\n\nEXISTING CANDIDATES:\n"
            f"{json.dumps(candidates, ensure_ascii=False)}"
        )
        settings = self.settings
        answer = await anyio.to_thread.run_sync(
            lambda: ask(
                provider,
                JUDGE,
                user,
                CompileDecision,
                wrap="decision",
                timeout=settings.capture.timeout_seconds,
                retries=settings.capture.retries,
                max_tokens=_MAX_TOKENS,
            )
        )
        decision = answer.decision
        if decision.action == "skip":
            return AtomOutcome(daily, atom.title, atom.type, "skip", "", decision.reason)
        if decision.action == "update":
            chosen = next((c for c in candidates if c["documentId"] == decision.supersedes), None)
            if chosen is None:
                raise AnswerInvalid(f"update names {decision.supersedes!r}, which is not a candidate")
            current = await self.ctx.store.get(slot, chosen["documentId"])
            title = (
                current.text.splitlines()[0].removeprefix("# ") if current and current.text else atom.title
            )
            await self._save(slot, chosen["documentName"], atom, title, decision.merged_text)
            return AtomOutcome(
                daily, atom.title, atom.type, "update", f"{slot}/{chosen['documentName']}", decision.reason
            )
        if any(c["documentName"] == name for c in candidates):
            digest = hashlib.sha256(f"{atom.title}\n{atom.body}".encode()).hexdigest()[:8]
            name = f"{name.removesuffix('.md')}-{digest}.md"
        await self._save(slot, name, atom, atom.title, atom.body)
        return AtomOutcome(daily, atom.title, atom.type, "create", f"{slot}/{name}", decision.reason)

    async def atom(self, daily: str, atom: Atom) -> AtomOutcome:
        problem = atom.problem()
        if problem:
            return AtomOutcome(daily, atom.title, atom.type, "dropped", "", problem)
        try:
            if atom.type == LESSON:
                return await self.lesson(daily, atom)
            return await self.fact(daily, atom)
        except StoreUnavailable:
            raise
        except MemctlError as exc:
            return AtomOutcome(daily, atom.title, atom.type, "error", "", str(exc))


async def compile_project(settings: Settings, provider: Provider | None, *, dry_run: bool) -> CompileReport:
    """Compile the project's dailies (see the module docstring); never raises for an outage."""
    dirs = CaptureDirs(settings.project)
    report = CompileReport(dry_run=dry_run)
    lock = FileLock(dirs.compile_lock, "compile")
    if not dry_run and not lock.acquire():
        owner = lock_owner(dirs.compile_lock) or {}
        report.skipped = f"another compile holds the lock (pid {owner.get('pid', '?')})"
        return report
    now = time.time()
    state = load_state(dirs)
    try:
        async with knowledge(settings) as ctx:
            if not dry_run:
                delivery = await deliver(dirs, ctx)
                if delivery.error:
                    raise StoreUnavailable(delivery.error)
            compiler = _Compiler(settings, ctx, provider, report, now)
            await _run(compiler, ctx, state, now)
    except StoreUnavailable as exc:
        report.stopped = str(exc)
    finally:
        if not dry_run:
            state["last_attempted_date"] = _today(now)
            state["last_run"] = {"at": now, "counts": report.counts(), "stopped": report.stopped}
            atomic_write(dirs.compile_state, json.dumps(state, indent=1))
            lock.release()
    return report


async def _run(compiler: _Compiler, ctx: KnowledgeContext, state: dict[str, Any], now: float) -> None:
    report = compiler.report
    retention = compiler.settings.capture.daily_retention_days * 86400
    dailies = await _daily_documents(ctx)
    report.dailies = len(dailies)
    for doc in dailies:
        if doc.name in state["compiled"]:
            if now - doc.created_at >= retention:
                if not report.dry_run:
                    await ctx.store.set_enabled(DAILY_SLOT, doc.id, False)
                    del state["compiled"][doc.name]
                report.retired.append(doc.name)
            continue
        atoms, broken = parse_atoms(doc.text)
        outcomes = [await compiler.atom(doc.name, atom) for atom in atoms]
        outcomes += [AtomOutcome(doc.name, "", "", "error", "", "unreadable atom block")] * broken
        report.atoms += outcomes
        if report.dry_run:
            continue
        failed = any(o.action == "error" for o in outcomes)
        attempts = state["attempts"].get(doc.name, 0) + 1 if failed else 0
        if not failed or attempts >= MAX_ATTEMPTS:
            state["compiled"][doc.name] = _today(now)
            state["attempts"].pop(doc.name, None)
            report.compiled.append(doc.name)
        else:
            state["attempts"][doc.name] = attempts
