"""The knowledge store a maintenance test and the job it runs share: the project's embedded
store, the Dify emulator (semantic search by the same model) or the real Dify (economy
datasets: keyword search only), named by the `opener` fixture's parameter."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import pytest

from memctl.operations import _maintain
from memory_bridge import Settings
from memory_bridge.search import lazy_minilm
from memory_bridge.stores import KnowledgeStore, open_knowledge_store
from memory_bridge.stores.dify import DifyKnowledgeStore

from ..bridges import MODEL_CACHE
from ..emulators.dify.app import create_app
from ..real_dify import RealDify, delete_datasets, unique_prefix

Opener = Callable[[], KnowledgeStore]

YEAR = 365 * 86_400.0
KINDS = ["sqlite", "dify-emulator", pytest.param("real-dify", marks=pytest.mark.real_dify)]


@contextmanager
def knowledge_opener(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, settings: Settings, slots: list[str]
) -> Iterator[Opener]:
    """How the test and the job open the store `request.param` names (a Dify one replaces
    the embedded store the project's settings name; the real one's datasets are deleted after)."""
    if request.param == "sqlite":
        yield lambda: open_knowledge_store(settings)
        return
    target: RealDify | None = None
    prefix = unique_prefix()
    if request.param == "dify-emulator":
        app = create_app(embedder=lazy_minilm(2, int8_cache=MODEL_CACHE), version="1.14.0")
        key = app.state.dify.add_api_key()

        def open_() -> KnowledgeStore:
            transport = httpx.ASGITransport(app=app)
            return DifyKnowledgeStore("http://dify.test/v1", key, default_slots=slots, transport=transport)

    else:
        target = request.getfixturevalue("real_dify")

        def open_() -> KnowledgeStore:
            assert target is not None
            return DifyKnowledgeStore(
                f"{target.url}/v1",
                target.api_key,
                default_slots=slots,
                dataset_prefix=prefix,
                technique="economy",
                wait_indexed=True,
            )

    monkeypatch.setattr(_maintain, "open_knowledge_store", lambda _settings, _embedder=None: open_())
    try:
        yield open_
    finally:
        if target is not None:
            delete_datasets(target, prefix)


def with_store(opener: Opener, slots: list[str], work: Callable[[KnowledgeStore], Any]) -> Any:
    """`await work(store)` on a freshly opened store with `slots` created, then closed."""

    async def run() -> Any:
        store = opener()
        try:
            for slot in slots:
                await store.create_slot(slot)
            return await work(store)
        finally:
            await store.close()

    return anyio.run(run)
