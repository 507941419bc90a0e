"""The Dify knowledge store, its API client, onboarding a Dify and the durable outbox in front
of it (`MAX_REJECTIONS`: how often Dify may refuse a queued write before it is dead-lettered).

Names load on first use, so a caller that never talks to Dify does not import httpx for it."""

import typing as _typing

from ..._lazy import lazy_attributes as _lazy_attributes

_LAZY = {
    "TESTED_RANGE": "._client",
    "DurableKnowledgeStore": "._outbox",
    "Outbox": "._outbox",
    "is_tested_version": "._client",
    "onboard": "._onboarding",
    "DifyClient": "._client",
    "DifyKnowledgeStore": "._store",
    "MAX_REJECTIONS": "._outbox",
}

# mypy sees the names themselves (a misspelt import fails the type check), Python the lazy lookup.
if _typing.TYPE_CHECKING:
    from ._client import TESTED_RANGE, DifyClient, is_tested_version
    from ._onboarding import onboard
    from ._outbox import MAX_REJECTIONS, DurableKnowledgeStore, Outbox
    from ._store import DifyKnowledgeStore
else:
    __getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "MAX_REJECTIONS",
    "TESTED_RANGE",
    "DifyClient",
    "DifyKnowledgeStore",
    "DurableKnowledgeStore",
    "Outbox",
    "is_tested_version",
    "onboard",
]
