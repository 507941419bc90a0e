"""`DifyState`: the emulator's whole in-memory world, and the knobs tests turn.

Reach it as `app.state.dify`. Typical test moves:

* `key = state.add_api_key()` (a `dataset-...` key; `type="app"` makes an app key, which the
  dataset API must refuse);
* `ds = state.create_dataset("kb", indexing_technique="economy")` and
  `doc = state.create_document(ds.id, "a.md", "text")`: the same code paths as the HTTP API;
* `state.outage = 502` (or 503): every request gets nginx's HTML error page, as when `api` is down;
* time: `state.advance(seconds)` moves the clock; `state.finish_indexing()` completes every pending
  job now; `state.stop_workers()` / `state.start_workers()` emulate a missing Celery worker
  (documents stay `waiting`); `state.pause_document(id)` / `state.resume_document(id)`;
* `state.indexing_failure = "..."`: jobs queued while set end in `error` with that message;
* `state.stale_status_flag = 600`: a status change leaves Dify's "being indexed" flag for that
  long, past its index task (the real race: Dify sets the flag after queueing the task), so
  further status changes of the document are refused until then (`finish_indexing` keeps it);
* `state.embedding_models` (default: one OpenAI model) and `state.rerank_models`: what the workspace's
  model providers offer; empty embedding models reproduce "No Embedding Model available";
* `state.knowledge_rate_limit = n`: Dify Cloud's per-minute knowledge rate limit (403 past it);
* `state.init_password`: the console's INIT_PASSWORD.
"""

from __future__ import annotations

import secrets
import string
from typing import Any

from .datasets import create_dataset
from .documents import create_by_text
from .errors import forbidden
from .lifecycle import Progress, progress
from .models import Account, ApiKey, Clock, ConsoleSession, Dataset, Document, new_id
from .quirks import Quirks
from .ranking import Embedder

__all__ = ["DifyState"]

_KEY_ALPHABET = string.ascii_letters + string.digits


class DifyState:
    """Workspace, owner, keys, datasets and the emulator's test knobs (see the module docstring)."""

    def __init__(self, *, version: str, indexing_delay: float, embedder: Embedder | None) -> None:
        self.version = version
        self.quirks = Quirks(version)
        self.deploy_env = "PRODUCTION"
        self.indexing_delay = indexing_delay
        self.embedder = embedder
        self.clock = Clock()
        self.owner = Account(new_id(), "admin", "admin@example.com")
        self.setup_at: float | None = None
        self.init_password: str | None = None
        self.api_keys: dict[str, ApiKey] = {}
        self.datasets: dict[str, Dataset] = {}
        self.embedding_models: list[tuple[str, str]] = [
            ("text-embedding-3-small", "langgenius/openai/openai")
        ]
        self.rerank_models: list[tuple[str, str]] = []
        self.outage: int | None = None
        self.knowledge_rate_limit: int | None = None
        self.indexing_failure: str | None = None
        self.stale_status_flag = 0.0
        self.workers_running = True
        self.console_sessions: list[ConsoleSession] = []
        self.init_sessions: set[str] = set()  # Flask session cookies that passed INIT_PASSWORD
        self.login_failures: dict[str, int] = {}
        self._knowledge_requests: list[float] = []

    # -- keys ---------------------------------------------------------------------------------

    def add_api_key(self, token: str | None = None, *, type: str = "dataset") -> str:
        """Register an API key (a fresh `dataset-` + 24 characters unless `token` is given)."""
        prefix = "dataset-" if type == "dataset" else "app-"
        token = token or prefix + "".join(secrets.choice(_KEY_ALPHABET) for _ in range(24))
        key = ApiKey(new_id(), token, type, self.now())
        self.api_keys[key.id] = key
        return token

    def key_for(self, token: str) -> ApiKey | None:
        return next((k for k in self.api_keys.values() if k.token == token), None)

    # -- time and indexing --------------------------------------------------------------------

    def now(self) -> float:
        return self.clock.now()

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    def all_documents(self) -> list[Document]:
        return [doc for ds in self.datasets.values() for doc in ds.documents.values()]

    def finish_indexing(self) -> None:
        """Complete every queued, running or paused job, and every pending enable/disable, now."""
        now = self.now()
        for doc in self.all_documents():
            job = doc.job
            job.paused_at, job.paused_for = None, 0.0
            job.started_at = (
                min(job.started_at if job.started_at is not None else now, now - job.duration) - 1e-3
            )
            doc.status_marker_until = min(doc.status_marker_until, now)
            doc.index_ready_at = min(doc.index_ready_at, now)
            doc.segments_switch_at = min(doc.segments_switch_at, now)

    def stop_workers(self) -> None:
        """No Celery worker: jobs queued from now on stay `waiting`."""
        self.workers_running = False

    def start_workers(self) -> None:
        """A worker appears and picks up every job left waiting."""
        self.workers_running = True
        now = self.now()
        for doc in self.all_documents():
            if doc.job.started_at is None:
                doc.job.started_at = now

    def pause_document(self, document_id: str) -> None:
        self.document(document_id).job.paused_at = self.now()

    def resume_document(self, document_id: str) -> None:
        job = self.document(document_id).job
        if job.paused_at is not None:
            job.paused_for += self.now() - job.paused_at
            job.paused_at = None

    def progress(self, document: Document) -> Progress:
        """Where `document`'s indexing job stands now (status, timestamps, segment counts)."""
        return progress(document, self.now())

    # -- lookups ------------------------------------------------------------------------------

    def dataset_named(self, name: str) -> Dataset | None:
        return next((ds for ds in self.datasets.values() if ds.name == name), None)

    def document(self, document_id: str) -> Document:
        return next(doc for doc in self.all_documents() if doc.id == document_id)

    def documents(self, dataset_id: str) -> list[Document]:
        return sorted(self.datasets[dataset_id].documents.values(), key=lambda d: d.position)

    def embedding_available(self, dataset: Dataset) -> bool:
        if dataset.indexing_technique != "high_quality":
            return True
        return (dataset.embedding_model, dataset.embedding_model_provider) in self.embedding_models

    # -- direct creation (the API's code paths) -----------------------------------------------

    def create_dataset(self, name: str, **fields: Any) -> Dataset:
        """As `POST /v1/datasets` with `{"name": name, **fields}`."""
        return create_dataset(self, {"name": name, **fields}, self.now())

    def create_document(self, dataset_id: str, name: str, text: str, **fields: Any) -> Document:
        """As `create-by-text` (process rule `automatic` unless given)."""
        body = {"name": name, "text": text, "process_rule": {"mode": "automatic"}, **fields}
        return create_by_text(self, self.datasets[dataset_id], body, self.now())

    # -- request accounting -------------------------------------------------------------------

    def count_knowledge_request(self, now: float) -> None:
        """Dify Cloud's sliding 60 s knowledge rate limit (off unless `knowledge_rate_limit` is set)."""
        if self.knowledge_rate_limit is None:
            return
        self._knowledge_requests = [t for t in self._knowledge_requests if t > now - 60] + [now]
        if len(self._knowledge_requests) > self.knowledge_rate_limit:
            raise forbidden(
                "Sorry, you have reached the knowledge base request rate limit of your subscription."
            )
