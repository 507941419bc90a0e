"""Search: text embedders, the packaged MiniLM model and its loaders, and the vector indexes
(`VectorIndex` exact, `AnnIndex` the HNSW graph over it).

Names load on first use, so nothing here imports onnxruntime until a model is loaded."""

import typing as _typing

from .._lazy import lazy_attributes as _lazy_attributes

_LAZY = {
    "Embedder": "._embed",
    "LazyEmbedder": "._embed",
    "QueryTokens": "._embed",
    "TokenEmbedder": "._embed",
    "MINILM_FLOAT_NAME": "._onnx",
    "MINILM_NAME": "._onnx",
    "lazy_minilm": "._onnx",
    "load_minilm": "._onnx",
    "VectorIndex": "._vectors",
    "AnnIndex": "._ann",
}

# mypy sees the names themselves (a misspelt import fails the type check), Python the lazy lookup.
if _typing.TYPE_CHECKING:
    from ._ann import AnnIndex
    from ._embed import Embedder, LazyEmbedder, QueryTokens, TokenEmbedder
    from ._onnx import MINILM_FLOAT_NAME, MINILM_NAME, lazy_minilm, load_minilm
    from ._vectors import VectorIndex
else:
    __getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "MINILM_FLOAT_NAME",
    "MINILM_NAME",
    "AnnIndex",
    "Embedder",
    "LazyEmbedder",
    "QueryTokens",
    "TokenEmbedder",
    "VectorIndex",
    "lazy_minilm",
    "load_minilm",
]
