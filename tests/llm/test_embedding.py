"""The local sentence embedder (all-MiniLM-L6-v2 from `plait[similar]`, run with numpy)."""

from __future__ import annotations

import math

import pytest

from plait.llm.embedding import NO_EMBEDDINGS, local_embedder, model_dir

pytestmark = pytest.mark.skipif(
    model_dir() is None,
    reason=NO_EMBEDDINGS,
)


def test_vectors_are_unit_length_and_384_wide() -> None:
    model = local_embedder()
    assert model is not None
    (vector,) = model.embed(["Ship the billing project by Friday."])
    assert len(vector) == 384
    assert math.isclose(sum(v * v for v in vector), 1.0, rel_tol=1e-5)


def test_paraphrases_are_close_and_unrelated_sentences_are_not() -> None:
    model = local_embedder()
    assert model is not None
    cat, kitten, revenue, long_text = model.embed(
        [
            "The cat sits on the mat.",
            "A kitten is resting on a rug.",
            "Quarterly revenue grew by 12 percent.",
            "word " * 400,  # longer than the model's 256 tokens: truncated, not an error
        ]
    )

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(cat, kitten) > 0.5
    assert abs(cos(cat, revenue)) < 0.2
    assert abs(cos(kitten, revenue)) < 0.2
    assert len(long_text) == 384
