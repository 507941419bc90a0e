"""The LLM behind `memctl maintain`'s llm-merge-near-duplicates and llm-semantic-refresh:
the capture provider (the settings compile uses) answering the MERGE and REFRESH prompts
in strict JSON. An answer that stays invalid after the retries, or names other documents
than it was given, is a keep (a refresh keeps the document stale); a provider that cannot
answer raises ProviderUnavailable, which stops the pass."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel

from memory_bridge import Settings
from memory_bridge.maintenance import MergeVerdict, RefreshVerdict

from .._errors import AnswerInvalid
from ..capture._llm import Provider, ask, make_provider
from ..capture._prompts import MERGE, REFRESH
from ..capture._schema import MergeDecision, RefreshDecision

__all__ = ["LlmJudge", "make_judge"]

_MAX_TOKENS = 1500
M = TypeVar("M", bound=BaseModel)


class LlmJudge:
    """`memory_bridge.maintenance.Judge` with the capture provider."""

    def __init__(self, provider: Provider, settings: Settings) -> None:
        self.provider = provider
        self.settings = settings

    async def _ask(self, system: str, user: Mapping[str, Any], model: type[M], wrap: str | None) -> M:
        provider, settings = self.provider, self.settings
        prompt = json.dumps(user, ensure_ascii=False)
        return await anyio.to_thread.run_sync(
            lambda: ask(
                provider,
                system,
                prompt,
                model,
                wrap=wrap,
                timeout=settings.capture.timeout_seconds,
                retries=settings.capture.retries,
                max_tokens=_MAX_TOKENS,
            )
        )

    async def merge(self, keeper: Mapping[str, Any], loser: Mapping[str, Any], score: float) -> MergeVerdict:
        user = {"similarity": round(score, 4), "keeper": keeper, "loser": loser}
        try:
            answer = (await self._ask(MERGE, user, MergeDecision, "decision")).decision
        except AnswerInvalid as exc:
            return MergeVerdict(False, reason=f"invalid answer: {exc}")
        if (answer.keeper_id, answer.loser_id) != (keeper["documentId"], loser["documentId"]):
            return MergeVerdict(False, reason="invalid answer: keeper_id and loser_id are not the pair asked")
        if answer.action == "merge":
            if not answer.merged_text.strip():
                return MergeVerdict(False, reason="invalid answer: merged_text is blank")
            return MergeVerdict(True, answer.merged_text.strip(), answer.reason)
        return MergeVerdict(False, reason=answer.reason)

    async def refresh(
        self, document: Mapping[str, Any], neighbours: Sequence[Mapping[str, Any]]
    ) -> RefreshVerdict:
        user = {"document": document, "neighbours": list(neighbours)}
        try:
            answer = await self._ask(REFRESH, user, RefreshDecision, None)
        except AnswerInvalid as exc:
            return RefreshVerdict("keep", reason=f"invalid answer: {exc}")
        if answer.document_id != document["documentId"]:
            return RefreshVerdict("keep", reason="invalid answer: document_id is not the document asked")
        text = answer.rewritten_text.strip() if answer.action == "rewrite" else ""
        return RefreshVerdict(answer.action, text, answer.stale_after, answer.reason)


def make_judge(settings: Settings) -> LlmJudge | None:
    """The judge of the capture provider the settings name; None when capture_provider is
    `none`. Raises ConfigError for a provider that cannot be used (an API without a key)."""
    provider = make_provider(settings)
    return None if provider is None else LlmJudge(provider, settings)
