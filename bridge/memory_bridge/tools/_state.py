"""What every tool reaches: settings, the stores, the metrics, the backends' watch.

The state is opened before the server runs (`_serve.open_state`) and handed to the tools
through the server's lifespan; a tool declares `ctx: ToolContext` and reads `state_of(ctx)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.mcpserver import Context

from .._backends import BackendWatch
from .._metrics import Metrics
from .._settings import Settings
from ..core._recall import RecallStamper
from ..stores._base import EntryStore
from ..stores._knowledge import KnowledgeStore

__all__ = ["AppState", "ToolContext", "state_of"]


@dataclass(frozen=True, slots=True)
class AppState:
    settings: Settings
    store: EntryStore
    metrics: Metrics
    knowledge: KnowledgeStore
    backends: BackendWatch
    recalls: RecallStamper | None = None  # recall stamping of what knowledge searches return


ToolContext = Context[AppState]
"""A tool's context: the request, and the server's lifespan state (an `AppState`)."""


def state_of(ctx: ToolContext) -> AppState:
    """The bridge state the server's lifespan holds."""
    return ctx.request_context.lifespan_context
