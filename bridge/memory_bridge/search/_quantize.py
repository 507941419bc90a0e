"""The bundled model with integer MatMul kernels, built once and cached.

The packaged graph stores int8 weights but turns them back into float32 before every
MatMul, so it runs float kernels. Here onnxruntime folds those constants once and
`quantize_dynamic` rewrites the MatMuls for int8 weights (per output channel, like the
packaged scales) and activations quantised at run time: about 2x less CPU per text.
The embedding tables stay the packaged int8 ones (`_int8_lookups`), so the model is no
bigger than the packaged one, in the file or in memory; the vectors do not change.
The padding mask's arithmetic is taken out too (`_without_padding_mask`): the embedder
never pads a text, so it only ever added zeros to the attention scores and checked
finite softmax outputs for NaN, about 7% of a text's CPU; the vectors stay bit for bit.
Each GELU becomes onnxruntime's one Gelu node instead of five (`_one_node_gelu`): about 9%
less CPU, and the int8 activations after it round a little differently.
The result is cached under a name derived from the source file's sha256, the
onnxruntime version and the recipe, written atomically with a digest beside it; a file
that does not match its digest is rebuilt, and building removes the models other
versions left. Where the cache cannot be written, the model is built in a temporary
directory on every load.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from pathlib import Path
from typing import Any

from .._files import PRIVATE_FILE_MODE, private_dir, write_atomically

__all__ = ["int8_model"]

_log = logging.getLogger(__name__)
_CONTRIB = "com.microsoft"  # onnxruntime's own operators (Gelu)
# change it when the conversion changes
RECIPE = "dynamic-qint8-per-channel-matmul-v1+int8-gather-v1+no-padding-mask-v1+gelu-node-v1"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _cache_name(source: Path) -> str:
    import onnxruntime

    key = _sha256(f"{_file_sha256(source)}\n{onnxruntime.__version__}\n{RECIPE}".encode())
    return f"minilm-int8-{key[:32]}.onnx"


def _file_sha256(path: Path) -> str:
    """The digest of a file read in chunks (the model is never held in memory whole)."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _cached(model: Path) -> bool:
    """Whether the cached model is there and matches its digest."""
    try:
        return _file_sha256(model) == model.with_suffix(".sha256").read_text(encoding="ascii").strip()
    except OSError:
        return False


def _quantize(source: Path, work: Path) -> bytes:
    """Fold the weight constants (onnxruntime's own preparation step: basic graph
    optimisation and shape inference), then quantise the MatMuls; returns the bytes."""
    from onnxruntime.quantization import QuantType, quant_pre_process, quantize_dynamic

    prepared, quantized = work / "prepared.onnx", work / "int8.onnx"
    quant_pre_process(source, prepared, skip_symbolic_shape=True)
    quantize_dynamic(
        prepared, quantized, op_types_to_quantize=["MatMul"], per_channel=True, weight_type=QuantType.QInt8
    )
    return _int8_lookups(source, quantized)


def _int8_lookups(source: Path, quantized: Path) -> bytes:
    """Put back the packaged int8 embedding tables that the folding turned into float32
    (the word table alone is 47 MB as float32, 12 MB as int8): each Gather reads the int8
    rows and their per-row scales, then multiplies them out, which is exactly what the
    folded constant held, for the looked-up rows only."""
    import onnx
    from onnx import helper

    packed = {i.name: i for i in onnx.load(str(source)).graph.initializer}
    model = onnx.load(str(quantized))
    graph = model.graph
    folded = {i.name: i for i in graph.initializer}
    nodes = []
    for node in graph.node:
        table = node.input[0] if node.op_type == "Gather" else ""
        q, scale = packed.get(f"{table}_q"), packed.get(f"{table}_scale")
        rows = all(a.i == 0 for a in node.attribute if a.name == "axis")  # a lookup of whole rows
        if table not in folded or q is None or scale is None or list(scale.dims)[-1:] != [1] or not rows:
            nodes.append(node)
            continue
        graph.initializer.remove(folded.pop(table))
        graph.initializer.extend([q, scale])
        ids, out = node.input[1], node.output[0]
        nodes += [
            helper.make_node("Gather", [q.name, ids], [f"{out}_q"], name=f"{node.name}_q", axis=0),
            helper.make_node(
                "Gather", [scale.name, ids], [f"{out}_scale"], name=f"{node.name}_scale", axis=0
            ),
            helper.make_node(
                "Cast", [f"{out}_q"], [f"{out}_f"], name=f"{node.name}_f", to=onnx.TensorProto.FLOAT
            ),
            helper.make_node("Mul", [f"{out}_f", f"{out}_scale"], [out], name=f"{node.name}_mul"),
        ]
    del graph.node[:]
    graph.node.extend(nodes)
    _one_node_gelu(model)
    _without_padding_mask(graph)  # then drops what no node reads any more
    data: bytes = model.SerializeToString()
    return data


def _constant(graph: Any, name: str) -> float | None:
    """The value of a one-element initializer, or None."""
    from onnx import numpy_helper

    for initializer in graph.initializer:
        if initializer.name == name:
            value = numpy_helper.to_array(initializer)
            return float(value.reshape(-1)[0]) if value.size == 1 else None
    return None


def _without_padding_mask(graph: Any) -> None:
    """Drop what the attention mask adds to unpadded texts, which is nothing: the
    Add of `Where(mask, 0, lowest float)` to the attention scores (zero everywhere) and
    the `Where(IsNaN(p), 0, p)` after each softmax (a softmax of finite scores has no
    NaN); then every node no output needs. The attention_mask input stays, unread."""
    producer = {output: node for node in graph.node for output in node.output}
    bias = {
        node.output[0]
        for node in graph.node
        if node.op_type == "Where"
        and _constant(graph, node.input[1]) == 0.0
        and (_constant(graph, node.input[2]) or 0.0) < -1e30
    }
    alias: dict[str, str] = {}
    for node in graph.node:
        if node.op_type == "Add" and set(node.input) & bias:
            alias[node.output[0]] = next(name for name in node.input if name not in bias)
        elif node.op_type == "Where" and _constant(graph, node.input[1]) == 0.0:
            check = producer.get(node.input[0])
            if check is not None and check.op_type == "IsNaN" and check.input[0] == node.input[2]:
                alias[node.output[0]] = node.input[2]
    for node in graph.node:
        for index, name in enumerate(node.input):
            while name in alias:
                name = alias[name]
            node.input[index] = name
    needed = {output.name for output in graph.output}
    kept = []
    for node in reversed(graph.node):
        if any(output in needed for output in node.output):
            kept.append(node)
            needed.update(node.input)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    unused = [i for i in graph.initializer if i.name not in needed]
    for initializer in unused:
        graph.initializer.remove(initializer)


def _one_node_gelu(model: Any) -> None:
    """Compute each GELU, `x * (0.5 * (1 + erf(x / sqrt 2)))` in five nodes as exported,
    with onnxruntime's one Gelu node (its own fusion misses this order of the products):
    about 9% less CPU per text. The same function in float32; the int8 activations after
    it round a little differently (cosine to the five-node vectors 0.997 at least)."""
    from onnx import helper

    graph = model.graph
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def only_next(node: Any, op: str) -> Any:
        after = consumers.get(node.output[0], [])
        return after[0] if len(after) == 1 and after[0].op_type == op else None

    def other(node: Any, name: str) -> str:
        return next((i for i in node.input if i != name), "")

    replaced: dict[int, Any] = {}
    dropped: set[int] = set()
    for div in graph.node:
        if div.op_type != "Div" or abs((_constant(graph, div.input[1]) or 0.0) - 2**0.5) > 1e-6:
            continue
        x = div.input[0]
        erf = only_next(div, "Erf")
        one = erf and only_next(erf, "Add")
        half = one and only_next(one, "Mul")
        out = half and only_next(half, "Mul")
        if not (
            out
            and _constant(graph, other(one, erf.output[0])) == 1.0
            and _constant(graph, other(half, one.output[0])) == 0.5
            and other(out, half.output[0]) == x
        ):
            continue
        gelu = helper.make_node("Gelu", [x], [out.output[0]], name=f"{out.name}_gelu", domain=_CONTRIB)
        replaced[id(out)] = gelu
        dropped.update(id(n) for n in (div, erf, one, half))
    nodes = [replaced.get(id(n), n) for n in graph.node if id(n) not in dropped]
    del graph.node[:]
    graph.node.extend(nodes)
    if replaced and _CONTRIB not in {o.domain for o in model.opset_import}:
        model.opset_import.append(helper.make_opsetid(_CONTRIB, 1))


def _store(cache_dir: Path, model: Path, data: bytes) -> None:
    """Write the model and then its digest, each replaced whole."""
    private_dir(cache_dir)
    for path, content in ((model, data), (model.with_suffix(".sha256"), _sha256(data).encode())):
        write_atomically(path, content, mode=PRIVATE_FILE_MODE)


def int8_model(source: Path, cache_dir: Path) -> Path | bytes:
    """The int8-kernel version of the ONNX model at `source`: the cached file's path, built
    (a few seconds) and cached first if needed, or its bytes when the cache cannot be
    written; raises if the source cannot be read or converted. A path lets onnxruntime
    load the file without a second copy of it in memory."""
    model = cache_dir / _cache_name(source)
    if _cached(model):
        return model
    with tempfile.TemporaryDirectory(prefix="memctl-quantize-") as work:
        data = _quantize(source, Path(work))
    try:
        _store(cache_dir, model, data)
        for stale in cache_dir.glob("minilm-int8-*"):  # other versions' models (about 23 MB each)
            if stale.stem != model.stem:
                stale.unlink(missing_ok=True)
    except OSError as exc:
        _log.warning(
            "cannot cache the int8 embedding model in %s (%s); it is rebuilt on every load", cache_dir, exc
        )
        return data
    return model
