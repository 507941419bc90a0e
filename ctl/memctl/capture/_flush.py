"""Flush: distil the turns of a session not distilled before into one new daily document.

Redact, then send only the turns after the session's high-water mark to the LLM; keep
the atoms that pass the schema; queue one new `daily-*.md` document (nothing is read
back or rewritten) and advance the mark. An LLM that fails or answers off-schema
writes nothing and leaves the mark, so the next hook tries those turns again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread

from memory_bridge import InvalidInput, Settings
from memory_bridge.core import redact

from ._daily import render_daily
from ._llm import Provider, ask
from ._lock import FileLock
from ._marks import load_mark, save_mark
from ._outbox import enqueue
from ._paths import CaptureDirs
from ._prompts import EXTRACT
from ._schema import Atom, ExtractorAnswer
from ._store import open_and_deliver
from ._transcript import read_turns, render_turns

__all__ = ["FlushResult", "flush"]

DAILY_SLOT = "daily"
_MAX_TOKENS = 1500


@dataclass
class FlushResult:
    """What one flush did. outcome: distilled, nothing-durable, nothing-new, too-few-turns, busy."""

    session_id: str
    outcome: str
    turns: int = 0
    atoms: int = 0
    dropped: list[str] = field(default_factory=list)
    daily: str | None = None
    delivered: list[str] = field(default_factory=list)
    queued: int = 0
    store_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [])}


def _truncate(body: str, limit: int) -> str:
    if len(body) <= limit:
        return body
    return body[-limit:] + f"\n\n[Truncated to the last {limit} characters.]"


def _atoms(answer: ExtractorAnswer) -> tuple[list[Atom], list[str]]:
    kept: list[Atom] = []
    dropped: list[str] = []
    for index, raw in enumerate(answer.atoms):
        try:
            atom = Atom.model_validate(raw)
        except ValueError as exc:
            dropped.append(f"atom {index}: {redact(str(exc).splitlines()[0])}")
            continue
        problem = atom.problem()
        if problem:
            dropped.append(f"atom {index} ({atom.title}): {problem}")
        else:
            kept.append(atom)
    return kept, dropped


async def flush(
    settings: Settings,
    provider: Provider,
    *,
    session_id: str,
    transcript: Path,
    event: str,
    lock_wait: float = 0.0,
) -> FlushResult:
    """Flush one session; raises InvalidInput for an unreadable transcript and the LLM's
    ProviderUnavailable or AnswerInvalid when it cannot distil (nothing is written then)."""
    dirs = CaptureDirs(settings.project)
    lock = FileLock(dirs.session_lock(session_id), f"flush {event}")
    if not await anyio.to_thread.run_sync(lambda: lock.acquire(wait=lock_wait)):
        return FlushResult(session_id, "busy")
    try:
        result = await _distil(settings, provider, dirs, session_id, transcript, event)
    finally:
        lock.release()
    delivery = await open_and_deliver(settings)
    result.delivered = [d["name"] for d in delivery.delivered]
    result.queued, result.store_error = delivery.pending, delivery.error
    return result


async def _distil(
    settings: Settings, provider: Provider, dirs: CaptureDirs, session_id: str, transcript: Path, event: str
) -> FlushResult:
    mark = load_mark(dirs, session_id, transcript)
    try:
        piece = read_turns(transcript, mark.offset)
    except OSError as exc:
        raise InvalidInput("transcript", f"{transcript}: cannot read it ({exc.strerror})") from None
    turns = len(piece.turns)
    if not turns:
        if piece.end > mark.offset:
            save_mark(dirs, session_id, transcript, piece.end, mark.turns)
        return FlushResult(session_id, "nothing-new")
    if turns < settings.capture.min_turns:
        return FlushResult(session_id, "too-few-turns", turns=turns)
    body = _truncate(redact(render_turns(piece.turns)), settings.capture.max_chars)
    user = (
        f"Hook event: {event}\nSession id: {session_id}\nWorkspace: {settings.project.name}\n\n"
        f"--- TRANSCRIPT ---\n\n{body}"
    )
    answer = await anyio.to_thread.run_sync(
        lambda: ask(
            provider,
            EXTRACT,
            user,
            ExtractorAnswer,
            timeout=settings.capture.timeout_seconds,
            retries=settings.capture.retries,
            max_tokens=_MAX_TOKENS,
        )
    )
    atoms, dropped = _atoms(answer)
    result = FlushResult(session_id, "distilled" if atoms else "nothing-durable", turns, len(atoms), dropped)
    if atoms:
        daily = render_daily(
            atoms, event=event, session_id=session_id, workspace=settings.project.name, now=time.time()
        )
        enqueue(dirs, DAILY_SLOT, daily.name, daily.text, {"tags": ["daily-flush"]})
        result.daily = daily.name
    save_mark(dirs, session_id, transcript, piece.end, mark.turns + turns)
    return result
