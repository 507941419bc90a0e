"""What every tool reaches: settings, the stores, the metrics, the backends' watch."""

from __future__ import annotations

from dataclasses import dataclass

from .._backends import BackendWatch
from .._metrics import Metrics
from .._settings import Settings
from ..stores._base import EntryStore
from ..stores._knowledge import KnowledgeStore

__all__ = ["AppState"]


@dataclass(frozen=True, slots=True)
class AppState:
    settings: Settings
    store: EntryStore
    metrics: Metrics
    knowledge: KnowledgeStore
    backends: BackendWatch
