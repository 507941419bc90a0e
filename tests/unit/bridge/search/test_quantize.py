"""The int8 model is built once into the cache, reused, and rebuilt when the cached file
is damaged; an unwritable cache only costs the rebuild."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from memory_bridge.search import MINILM_FLOAT_NAME, MINILM_NAME, load_minilm
from memory_bridge.search._onnx import OnnxEmbedder, _model_path, open_session, session_options
from memory_bridge.search._quantize import _one_node_gelu, int8_model


def cached_files(cache: Path) -> dict[str, tuple[int, int]]:
    """Name -> (inode, mtime) of every file in the cache."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(cache.iterdir())}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """A cache the int8 model was built into, and the model's bytes."""
    cache = tmp_path_factory.mktemp("model-cache")
    model = int8_model(_model_path(), cache)
    assert isinstance(model, Path)  # the cached file, for onnxruntime to load without a copy in memory
    return cache, model.read_bytes()


def test_the_model_is_built_once_and_then_read_from_the_cache(built: tuple[Path, bytes]) -> None:
    cache, model = built
    before = cached_files(cache)
    assert [Path(name).suffix for name in before] == [".onnx", ".sha256"]
    cached = int8_model(_model_path(), cache)
    assert isinstance(cached, Path) and cached.read_bytes() == model
    assert cached_files(cache) == before  # nothing was written again


def test_the_embedding_tables_stay_int8(built: tuple[Path, bytes]) -> None:
    """Folding the packaged graph's constants must not leave a float32 copy of the word
    table (47 MB) in the model: onnxruntime would hold it in memory."""
    assert len(built[1]) < 1.1 * _model_path().stat().st_size


def test_a_damaged_cached_model_is_rebuilt(built: tuple[Path, bytes], tmp_path: Path) -> None:
    cache, model = built
    shutil.copytree(cache, tmp_path, dirs_exist_ok=True)
    cached = next(tmp_path.glob("*.onnx"))
    with cached.open("r+b") as file:  # a run of zeroed bytes inside the weights
        file.seek(len(model) // 2)
        file.write(bytes(64))
    older = tmp_path / "minilm-int8-0123456789abcdef.onnx"  # left by another onnxruntime version
    older.write_bytes(b"old")
    assert int8_model(_model_path(), tmp_path) == cached
    assert cached.read_bytes() == model
    assert not older.exists()


def test_an_unwritable_cache_still_gives_the_model(built: tuple[Path, bytes], tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("x")
    assert int8_model(_model_path(), not_a_directory) == built[1]


def test_int8_vectors_are_recorded_under_their_own_name_and_match_float_ones(
    built: tuple[Path, bytes],
) -> None:
    texts = ["Rotate the API keys every 30 days.", "Money is stored as integer cents, never floats."]
    int8 = load_minilm(1, int8_cache=built[0])
    float32 = load_minilm(1)
    assert (int8.name, float32.name) == (MINILM_NAME, MINILM_FLOAT_NAME)
    similarity = np.sum(int8.embed_documents(texts) * float32.embed_documents(texts), axis=1)
    assert similarity.min() > 0.98


@pytest.fixture(scope="module")
def folded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged model as onnxruntime's own dynamic quantisation leaves it (float32
    embedding tables, the padding mask's arithmetic, GELU in five nodes)."""
    from onnxruntime.quantization import QuantType, quant_pre_process, quantize_dynamic

    work = tmp_path_factory.mktemp("folded")
    quant_pre_process(_model_path(), work / "prepared.onnx", skip_symbolic_shape=True)
    quantize_dynamic(
        work / "prepared.onnx",
        work / "folded.onnx",
        op_types_to_quantize=["MatMul"],
        per_channel=True,
        weight_type=QuantType.QInt8,
    )
    return work / "folded.onnx"


def embedder_of(model: Path | bytes) -> OnnxEmbedder:
    """The bundled model's embedder around another graph of it."""
    import onnxruntime

    reference = load_minilm(1)
    return OnnxEmbedder(
        open_session(onnxruntime, model), reference._tokenizer, MINILM_NAME, reference.dimension
    )


EMBEDDED = [
    "Rotate the API keys every 30 days.",
    "Money is stored as integer cents, never floats.",
    "Maya: traded the old car in for a grey pickup truck yesterday",
    "Deploys go out from the release branch after the smoke tests pass on staging.",
    "ok",
]


def test_int8_embedding_tables_give_the_same_vectors_as_the_folded_float_ones(
    built: tuple[Path, bytes], folded: Path
) -> None:
    """Keeping the tables int8 and dropping the padding mask's arithmetic save memory and
    CPU and change no vector, bit for bit."""
    import onnx

    assert folded.stat().st_size > 2 * len(built[1])  # the word table as float32
    model = onnx.load(folded)
    _one_node_gelu(model)
    lean = load_minilm(1, int8_cache=built[0])
    wide = embedder_of(model.SerializeToString())
    assert np.array_equal(lean.embed_documents(EMBEDDED), wide.embed_documents(EMBEDDED))


def test_the_int8_model_computes_each_gelu_in_one_node(built: tuple[Path, bytes]) -> None:
    """Five nodes a GELU as exported, which onnxruntime's own fusion does not recognise."""
    import onnx

    ops = [node.op_type for node in onnx.load_from_string(built[1]).graph.node]
    assert ops.count("Gelu") == 6  # one per layer
    assert "Erf" not in ops


def test_one_node_gelus_keep_the_models_vectors(built: tuple[Path, bytes], folded: Path) -> None:
    """The same function in float32: the int8 activations after it round a little
    differently, so the vectors keep their model's name."""
    lean = load_minilm(1, int8_cache=built[0])
    similarity = np.sum(
        lean.embed_documents(EMBEDDED) * embedder_of(folded).embed_documents(EMBEDDED), axis=1
    )
    assert similarity.min() > 0.995


def test_the_int8_model_does_no_padding_mask_arithmetic(built: tuple[Path, bytes]) -> None:
    """Texts are never padded: the mask only added zeros and looked for NaN (~7% of the CPU)."""
    import onnx

    graph = onnx.load_from_string(built[1]).graph
    ops = {node.op_type for node in graph.node}
    assert not ops & {"Where", "IsNaN"}
    assert "Softmax" in ops
    assert "attention_mask" in {i.name for i in graph.input}  # still accepted, no longer read


def test_the_model_runs_its_layer_norms_unfused(built: tuple[Path, bytes], tmp_path: Path) -> None:
    """onnxruntime's SkipLayerNormalization fusion cost ~27% of a text's CPU here."""
    import onnx
    import onnxruntime

    options = session_options(onnxruntime)
    options.optimized_model_filepath = str(tmp_path / "as-run.onnx")
    open_session(onnxruntime, next(built[0].glob("*.onnx")), options)
    ops = {node.op_type for node in onnx.load(tmp_path / "as-run.onnx").graph.node}
    assert "SkipLayerNormalization" not in ops
    assert "LayerNormalization" in ops


def test_unfused_layer_norms_keep_the_models_vectors(built: tuple[Path, bytes]) -> None:
    """The float graph gives the same vectors either way; the int8 one moves by the rounding
    of its activations only, so stored vectors keep their model's name."""
    import onnxruntime

    for cache, closest in ((built[0], 0.995), (None, 0.999999)):
        unfused = load_minilm(1, int8_cache=cache)
        source = next(built[0].glob("*.onnx")) if cache is not None else _model_path()
        session = onnxruntime.InferenceSession(
            str(source), sess_options=session_options(onnxruntime), providers=["CPUExecutionProvider"]
        )
        fused = OnnxEmbedder(session, unfused._tokenizer, unfused.name, unfused.dimension)
        similarity = np.sum(unfused.embed_documents(EMBEDDED) * fused.embed_documents(EMBEDDED), axis=1)
        assert similarity.min() > closest
