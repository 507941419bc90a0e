"""The embedded knowledge store's ANN vector index: used from a size threshold on, with the
same hits and scores as exact search, kept in `knowledge.ann` and `knowledge.ann.graph`
beside the database, and rebuilt or caught up when they are missing, damaged or stale."""

from __future__ import annotations

import hashlib
import json
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from memory_bridge.search import _ann
from memory_bridge.stores import DocMetadata, KnowledgeFilter
from memory_bridge.stores.sqlite import Ranking, SqliteKnowledgeStore

pytestmark = pytest.mark.anyio

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "kappa",
    "lambda",
    "sigma",
    "omega",
    "river",
    "stone",
    "cloud",
    "ember",
    "frost",
]


class HashEmbedder:
    """Deterministic unit vectors from each text's hash: no model needed."""

    name = "hash-test"
    dimension = 32

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        vector = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
        return vector / np.linalg.norm(vector)

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._vector(text)


@pytest.fixture(autouse=True)
def graph_for_every_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small corpus would be searched exactly over its allowed passages: ask the graph."""
    monkeypatch.setattr(_ann, "EXACT_BELOW", 0)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "knowledge.db"


def open_store(path: Path, threshold: int) -> SqliteKnowledgeStore:
    return SqliteKnowledgeStore(
        path,
        embedder=HashEmbedder(),
        default_slots=["knowledge"],
        ranking=Ranking(dense_candidates=12),
        ann_threshold=threshold,
    )


def text(i: int) -> str:
    return " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7)) + f" note {i}"


async def fill(store: SqliteKnowledgeStore, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        metadata = DocMetadata(language="odd" if i % 2 else "even")
        await store.upsert("knowledge", f"doc{i}.md", text(i), metadata, origin="t")
    await store.search(["knowledge"], "warm", KnowledgeFilter(), top_k=1, score_threshold=None)


QUERIES = ["alpha river", "frost ember note", "stone", "omega kappa 7", "cloud delta sigma"]


async def results(store: SqliteKnowledgeStore, flt: KnowledgeFilter | None = None) -> list[object]:
    out: list[object] = []
    for mode in ("hybrid", "semantic"):
        for query in QUERIES:
            page = await store.search(
                ["knowledge"], query, flt or KnowledgeFilter(), top_k=8, score_threshold=None, mode=mode
            )
            out.append([(h.document_name, h.score) for h in page.hits])
    return out


def wait_for_builds() -> None:
    for thread in threading.enumerate():
        if thread.name == "knowledge-ann-build":
            thread.join()


@pytest.fixture
def no_builds() -> Iterator[None]:
    yield
    wait_for_builds()


async def test_a_store_below_the_threshold_searches_exactly_and_keeps_no_index(path: Path) -> None:
    store = open_store(path, threshold=1000)
    try:
        await fill(store, 30)
        assert await results(store)
        wait_for_builds()
        assert not path.with_suffix(".ann").exists()
        state = await store.vector_index_state()
        assert state is not None and not state.needed and state.saved == "missing"
    finally:
        await store.close()


async def test_above_the_threshold_search_returns_the_hits_and_scores_of_exact_search(
    path: Path, no_builds: None
) -> None:
    exact = open_store(path, threshold=0)  # 0: never an ANN index
    await fill(exact, 80)
    expected = await results(exact)
    expected_filtered = await results(exact, KnowledgeFilter(language="odd"))
    await exact.close()
    store = open_store(path, threshold=10)
    try:
        assert await results(store) == expected  # exact while the index is built in the background
        wait_for_builds()
        state = await store.vector_index_state()
        assert state is not None and state.usable and state.saved.startswith("80 passages")
        assert await results(store) == expected
        assert await results(store, KnowledgeFilter(language="odd")) == expected_filtered
    finally:
        await store.close()


async def test_the_index_file_is_private_and_reused_after_a_restart(path: Path, no_builds: None) -> None:
    store = open_store(path, threshold=10)
    await fill(store, 40)
    state = await store.rebuild_vector_index()
    assert state is not None and state.saved.startswith("40 passages")
    expected = await results(store)
    await store.close()
    wait_for_builds()  # a build the first searches started may still be saving: not the restart's
    files = [path.with_suffix(".ann"), path.with_suffix(".ann.graph")]
    assert [stat.S_IMODE(f.stat().st_mode) for f in files] == [0o600, 0o600]
    saved = [f.read_bytes() for f in files]
    store = open_store(path, threshold=10)
    try:
        assert await results(store) == expected
        assert not any(t.name == "knowledge-ann-build" for t in threading.enumerate())
        assert [f.read_bytes() for f in files] == saved
    finally:
        await store.close()


@pytest.mark.parametrize(
    "damage", ["garbage", "truncated", "flipped", "graph flipped", "graph missing", "graph of another save"]
)
async def test_a_damaged_index_file_is_rebuilt_and_no_stored_data_changes(
    path: Path, damage: str, no_builds: None
) -> None:
    store = open_store(path, threshold=10)
    await fill(store, 40)
    await store.rebuild_vector_index()
    expected = await results(store)
    await store.close()
    wait_for_builds()  # a build the first writes started would save over the damage
    index, graph = path.with_suffix(".ann"), path.with_suffix(".ann.graph")
    data, graph_data = index.read_bytes(), graph.read_bytes()
    if damage == "garbage":
        index.write_bytes(b"not an index at all")
    elif damage == "truncated":
        index.write_bytes(data[: len(data) // 2])
    elif damage == "flipped":
        index.write_bytes(data[:-10] + bytes(b ^ 0xFF for b in data[-10:]))
    elif damage == "graph flipped":  # usearch is never handed bytes the checksum did not pass
        graph.write_bytes(graph_data[:-10] + bytes(b ^ 0xFF for b in graph_data[-10:]))
    elif damage == "graph missing":
        graph.unlink()
    else:  # a crash between the two files' replacements: a graph with other rows
        other = open_store(path.with_name("other.db"), threshold=10)
        await fill(other, 30)
        await other.rebuild_vector_index()
        await other.close()
        graph.write_bytes(path.with_name("other.ann.graph").read_bytes())
    store = open_store(path, threshold=10)
    state = await store.vector_index_state()
    assert state is not None and not state.usable and state.saved.startswith("unusable")
    try:
        assert await results(store) == expected
        wait_for_builds()
        state = await store.vector_index_state()
        assert state is not None and state.usable and state.saved.startswith("40 passages")
        assert await results(store) == expected
        assert await store.count() == 40
    finally:
        await store.close()


async def test_a_stale_index_catches_up_with_another_writer(path: Path, no_builds: None) -> None:
    store = open_store(path, threshold=10)
    await fill(store, 40)
    await store.rebuild_vector_index()
    await store.close()
    other = open_store(path, threshold=0)  # another process, writing without the index
    await fill(other, 5, start=40)
    gone = await other.find("knowledge", "doc3.md")
    assert gone is not None and await other.delete("knowledge", gone.id)
    expected = await results(other)
    await other.close()
    store = open_store(path, threshold=10)
    try:
        assert await results(store) == expected
    finally:
        await store.close()


async def test_a_removed_document_leaves_the_results(path: Path, no_builds: None) -> None:
    store = open_store(path, threshold=10)
    try:
        await fill(store, 40)
        await store.rebuild_vector_index()
        page = await store.search(["knowledge"], text(7), KnowledgeFilter(), top_k=3, score_threshold=None)
        assert page.hits[0].document_name == "doc7.md"
        await store.delete("knowledge", page.hits[0].document_id)
        page = await store.search(["knowledge"], text(7), KnowledgeFilter(), top_k=40, score_threshold=None)
        assert "doc7.md" not in [h.document_name for h in page.hits]
    finally:
        await store.close()


def test_loading_the_index_reads_the_graph_from_its_own_file(tmp_path: Path) -> None:
    """usearch reads the graph from its file into its own memory: Python holds no copy of
    it (the file's bytes used to be read first: at 1M passages each copy of the graph is
    ~630 MiB of the bridge's peak RSS at start-up, bench/knowledge_scale.py)."""
    import tracemalloc

    from memory_bridge.stores.sqlite._knowledge_ann import graph_path, load, save

    index = twenty_thousand_rows()
    file = tmp_path / "knowledge.ann"
    save(file, index, "tag")
    tracemalloc.start()
    try:
        loaded = load(file, "tag", 32, index.fetch)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(loaded) == 20_000
    graph = graph_path(file).stat().st_size
    assert peak < graph / 2, f"loading held {peak:,} bytes in Python for a {graph:,}-byte graph"


async def test_an_index_saved_with_the_graph_inside_is_read_and_saved_anew(
    path: Path, no_builds: None
) -> None:
    """Version 1 kept the graph inside `knowledge.ann`: such a file is still used (no
    rebuild), and is written as two files when the store closes."""
    store = open_store(path, threshold=10)
    await fill(store, 40)
    await store.rebuild_vector_index()
    expected = await results(store)
    await store.close()
    wait_for_builds()  # a build the first writes started would save over the old layout
    index, graph = path.with_suffix(".ann"), path.with_suffix(".ann.graph")
    index.write_bytes(version_one(index.read_bytes(), graph.read_bytes()))
    graph.unlink()
    store = open_store(path, threshold=10)
    try:
        state = await store.vector_index_state()
        assert state is not None and state.usable and state.saved.startswith("40 passages")
        assert await results(store) == expected
        assert not any(t.name == "knowledge-ann-build" for t in threading.enumerate())
    finally:
        await store.close()
    assert graph.exists() and header_of(index.read_bytes())["version"] == 2
    store = open_store(path, threshold=10)
    try:
        assert await results(store) == expected
    finally:
        await store.close()


MAGIC = b"memctl-ann\n"


def header_of(data: bytes) -> dict[str, object]:
    length = int.from_bytes(data[len(MAGIC) : len(MAGIC) + 4], "big")
    header: dict[str, object] = json.loads(data[len(MAGIC) + 4 : len(MAGIC) + 4 + length])
    return header


def version_one(data: bytes, graph: bytes) -> bytes:
    """The same index in version 1's layout: header, rows, then the graph, one checksum."""
    header = header_of(data)
    rows = data[-17 * int(str(header["rows"])) :]
    old = {k: header[k] for k in ("tag", "dimension", "generation", "rows")}
    old |= {"version": 1, "graph": len(graph), "sha256": hashlib.sha256(rows + graph).hexdigest()}
    encoded = json.dumps(old).encode()
    return MAGIC + len(encoded).to_bytes(4, "big") + encoded + rows + graph


def twenty_thousand_rows() -> _ann.AnnIndex:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((20_000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = _ann.AnnIndex(32, lambda passages: ([], np.empty((0, 32), dtype=np.float32)))
    index.add_rows(list(range(1, 20_001)), list(range(1, 20_001)), vectors, threads=2)
    return index
