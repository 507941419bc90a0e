"""The default model stays lean: one instance for entries and knowledge, onnxruntime sized
for one text at a time, and background embedding that gives way to the calls served."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import numpy as np
import onnxruntime
import pytest

from memory_bridge import Settings, open_state
from memory_bridge.search import _background
from memory_bridge.search._background import BACKGROUND_NICE, embed_in_background, foreground
from memory_bridge.search._onnx import session_options

pytestmark = pytest.mark.anyio


def test_the_session_runs_one_text_on_one_thread_in_its_own_arena() -> None:
    options = session_options(onnxruntime)
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (1, 1)
    assert options.execution_mode == onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    assert options.enable_cpu_mem_arena
    assert not options.enable_mem_pattern


async def test_entries_and_knowledge_share_one_model(tmp_path: Path) -> None:
    settings = Settings(project=tmp_path, embedding_model="minilm")
    async with open_state(settings) as state:
        entry_model = state.store._semantic.embedder  # type: ignore[attr-defined]
        assert entry_model is state.knowledge.inner.embedder  # type: ignore[attr-defined]


class Recorder:
    """A stand-in model that records each text and the priority of the thread embedding it."""

    name = "recorder"
    dimension = 2

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        priority = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        self.calls += [(text, priority) for text in texts]
        return np.ones((len(texts), 2), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


async def test_background_embedding_waits_while_a_request_is_in_flight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_background, "MAX_WAIT_SECONDS", 3600.0)
    model = Recorder()
    results: list[np.ndarray] = []

    async def embed() -> None:
        results.append(await embed_in_background(model, ["a", "b"]))

    async with anyio.create_task_group() as tasks:
        with foreground.serving():
            tasks.start_soon(embed)
            for _ in range(20):  # the embedding task gets many turns, and uses none of them
                await anyio.sleep(0.01)
            assert model.calls == []
    assert [text for text, _ in model.calls] == ["a", "b"]
    assert results[0].shape == (2, 2)


async def test_background_embedding_runs_at_the_lowest_priority() -> None:
    model = Recorder()
    await embed_in_background(model, ["a"])
    assert model.calls == [("a", BACKGROUND_NICE)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) != BACKGROUND_NICE  # only that thread


async def test_a_tool_call_counts_as_in_flight_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through a real MCP client: while memory_get runs, background embedding would wait."""
    from mcp import Client

    from memory_bridge import build_server

    seen: list[int] = []
    async with open_state(Settings(project=tmp_path, embedding_model="none")) as state:
        get = state.store.get

        async def watched_get(*args: object, **kwargs: object) -> object:
            seen.append(foreground.in_flight)
            return await get(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(state.store, "get", watched_get)
        async with Client(build_server(state)) as client:
            await client.call_tool("memory_get", {"id": "nothing-here"})
    assert seen and seen[0] >= 1
    assert foreground.in_flight == 0
