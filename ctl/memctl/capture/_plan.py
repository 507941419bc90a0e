"""Plan capture: an approved plan becomes `plan-<slug>.md` in the plans slot.

The name comes from the plan's first `# ` heading (else its first line), so revising a
plan under the same title updates the same document. Titles in any script get a
distinct, stable name: non-ASCII letters keep their code points, and a title too long
(or with no letters at all) gets a short hash of itself.
"""

from __future__ import annotations

import hashlib

from memory_bridge import InvalidInput, Settings
from memory_bridge.core import redact, slugify

from ._outbox import Delivery, enqueue
from ._paths import CaptureDirs
from ._store import open_and_deliver

__all__ = ["PLANS_SLOT", "capture_plan", "plan_document", "plan_name"]

PLANS_SLOT = "plans"
_SLUG_MAX = 60


def _title(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("# "):
            return line[2:].strip()
    return lines[0][:80] if lines else ""


def plan_name(title: str) -> str:
    """`plan-<slug>.md`: the same title always gives the same name, different titles differ."""
    slug = slugify(title, limit=10_000)
    if len(slug) > _SLUG_MAX or slug == "untitled":
        digest = hashlib.sha256(title.strip().encode("utf-8")).hexdigest()[:8]
        slug = f"{slug[: _SLUG_MAX - 9].strip('-')}-{digest}"
    return f"plan-{slug}.md"


def plan_document(plan: str) -> tuple[str, str]:
    """(name, text) of a plan, redacted; an empty plan is InvalidInput."""
    text = redact(plan).strip()
    if not text:
        raise InvalidInput("plan", "is empty")
    return plan_name(_title(text)), text + "\n"


async def capture_plan(settings: Settings, plan: str) -> tuple[str, Delivery]:
    """Queue the plan for the plans slot and deliver it; returns its name and the delivery."""
    name, text = plan_document(plan)
    metadata = {"atom_type": "plan", "task_type": "planning", "tags": ["plan"]}
    enqueue(CaptureDirs(settings.project), PLANS_SLOT, name, text, metadata)
    return name, await open_and_deliver(settings)
